// Nodes page: GET /api/v2/nodes (GPUs total / allocated / free per worker, who holds them, each GPU's
// use from the tasks' telemetry as a bar, CPU-only nodes named, the CPU and memory its tasks use now and
// over the last half hour as sparklines — figures the API computed, `use`) and the
// queue head (tasks not yet placed; my own waiting tasks with the scheduler's reason). Other users'
// tasks arrive from the API without id or user for non-admins: shown as "another user's task".
import { api, el, fmtBytes, fmtTime, page, poll, statusBadge, t } from "./common.js";
import { errorMessage, sayMessage } from "./messages.js";

function holder(task) {
  const idle = task.idle_gpus_since ? el("span", { class: "badge idle", title: t("nodes.idle_title") },
    `${t("nodes.idle")} ${t("nodes.idle_since", { time: fmtTime(task.idle_gpus_since * 1000) })}`) : "";
  if (!task.task_id) return el("span", { class: "muted other" }, t("nodes.other_task", { gpus: task.gpus }), " ", idle);
  return el("span", {}, el("a", { href: `/tasks/${encodeURIComponent(task.task_id)}` }, task.task_id),
    page.is_admin ? ` (${task.user})` : "", ` · ${task.gpus} GPU `, idle);
}

/** Each sampled GPU of the node as a small bar (utilisation %) with its memory in use; what the API
 * computed from the tasks' telemetry (`gpu_use`), or why there is nothing to draw. */
function gpuUse(n) {
  if (n.cpu_only) return el("span", { class: "muted nodes-cpu-only" }, t("nodes.cpu_only"));
  if (!n.gpu_use) return el("span", { class: "muted nodes-no-sample" }, t("nodes.no_sample"));
  const bars = n.gpu_use.gpus.map((g, i) => {
    const pct = g.util_pct === null ? 0 : g.util_pct;
    const label = `${g.util_pct === null ? "?" : Math.round(g.util_pct)} %` +
      (g.mem_mib === null ? "" : ` · ${(g.mem_mib / 1024).toFixed(1)} GiB`);
    return el("div", { class: "nodes-gpu", title: t("nodes.gpu_title", { i, task: g.task_id || t("nodes.another") }) },
      el("span", { class: "nodes-bar" }, el("span", { class: "nodes-fill", style: `width:${pct}%` })),
      el("span", { class: "nodes-gpu-label mono" }, label));
  });
  const mean = n.gpu_use.util_mean_pct === null ? "" : t("nodes.gpu_mean", { pct: Math.round(n.gpu_use.util_mean_pct) });
  return el("div", { class: "nodes-gpus" }, el("span", { class: "hint nodes-gpu-mean" }, mean), ...bars);
}

const SVG = "http://www.w3.org/2000/svg";

/** A small line over the last half hour (the API's per-minute shares, 0-100 %; beyond 100 is clipped). */
function sparkline(points, cls) {
  const w = 90, h = 20;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", `nodes-spark ${cls}`);
  svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
  svg.setAttribute("width", String(w));
  svg.setAttribute("height", String(h));
  svg.setAttribute("aria-hidden", "true");
  const shown = points.filter((p) => p[1] !== null);
  svg.dataset.points = String(shown.length);
  if (shown.length) {
    const t0 = shown[0][0], span = Math.max(60, shown[shown.length - 1][0] - t0);
    const line = document.createElementNS(SVG, "polyline");
    line.setAttribute("points", shown.map(([t, v]) =>
      `${((t - t0) / span * (w - 2) + 1).toFixed(1)},${(h - 1 - Math.min(100, Math.max(0, v)) / 100 * (h - 2)).toFixed(1)}`).join(" "));
    svg.append(line);
  }
  return svg;
}

/** CPU and memory that Argus's running tasks use on the node: now (cores, bytes, share of the node) and a
 * sparkline each; or that no task sampled any. */
function cpuMem(n) {
  const u = n.use;
  if (!u || (u.cpu === null && !u.history.length)) return el("span", { class: "muted nodes-no-use" }, t("nodes.no_use"));
  const pct = (v) => (v === null ? "" : ` (${Math.round(v)} %)`);
  const cpu = u.cpu === null ? "—" : t("nodes.cpu_now", { cores: u.cpu.toFixed(1) }) + pct(u.cpu_pct);
  const mem = u.rss === null ? "—" : fmtBytes(u.rss) + pct(u.mem_pct);
  return el("div", { class: "nodes-cpumem", title: t("nodes.use_title") },
    el("div", { class: "nodes-use-row nodes-cpu" }, el("span", { class: "nodes-use-key" }, t("nodes.cpu")),
      sparkline(u.history.map(([ts, c]) => [ts, c]), "cpu"), el("span", { class: "mono nodes-use-val" }, cpu)),
    el("div", { class: "nodes-use-row nodes-mem" }, el("span", { class: "nodes-use-key" }, t("nodes.mem")),
      sparkline(u.history.map(([ts, , m]) => [ts, m]), "mem"), el("span", { class: "mono nodes-use-val" }, mem)));
}

async function load() {
  const err = document.getElementById("nodes-error");
  let view;
  try {
    view = await api("/api/v2/nodes");
  } catch (e) { // a refused or failed request: said on the page, in its language where the API coded it
    err.hidden = false;
    err.textContent = errorMessage(e);
    return;
  }
  err.hidden = !view.error;
  err.textContent = sayMessage(view.error_code, view.error_params, view.error || "");
  document.getElementById("nodes-total").textContent =
    t("nodes.summary", { total: view.gpus_total, allocated: view.gpus_allocated, free: view.gpus_total - view.gpus_allocated });
  document.getElementById("nodes-body").replaceChildren(...view.nodes.map((n) => el("tr", { "data-node": n.node_id },
    el("td", { class: "mono" }, n.hostname || n.node_id, el("div", { class: "hint" }, n.ip || "")),
    el("td", {}, el("span", { class: `badge ${n.alive ? "st-succeeded" : "st-failed"}` }, n.alive ? t("nodes.alive") : t("nodes.lost"))),
    el("td", { class: "num" }, n.gpus_total), el("td", { class: "num" }, n.gpus_allocated),
    el("td", { class: "num" }, Math.max(0, n.gpus_total - n.gpus_allocated)), el("td", { class: "num" }, n.cpus_total),
    el("td", { class: "nodes-use" }, gpuUse(n)),
    el("td", { class: "nodes-cpumem-cell" }, cpuMem(n)),
    el("td", {}, n.tasks.length ? n.tasks.map((x) => el("div", {}, holder(x))) : "—"))));
  document.getElementById("nodes-empty").hidden = view.nodes.length > 0;
  // The queue head: the oldest waiting tasks with the scheduler's reason (others' redacted by the
  // API for non-admins), then tasks handed to Ray but not yet on a node.
  const queued = view.queue.map((x) => ({ ...x, reason: sayMessage(x.pending_reason_code, x.pending_reason_params, x.pending_reason) }));
  const unplaced = view.unplaced.map((x) => ({ ...x, reason: "" }));
  const rows = [...queued, ...unplaced].map((x) => el("tr", { "data-task": x.task_id || "" },
    el("td", { class: "mono" }, x.task_id ? el("a", { href: `/tasks/${encodeURIComponent(x.task_id)}` }, x.task_id) : t("nodes.other_task", { gpus: x.gpus })),
    el("td", {}, x.user || "—"), el("td", {}, statusBadge(x.status)), el("td", { class: "num" }, x.gpus),
    el("td", { class: "reason" }, x.reason)));
  document.getElementById("queue-body").replaceChildren(...rows);
  document.getElementById("queue-empty").hidden = rows.length > 0;
  const more = view.queued_total - view.queue.length;
  document.getElementById("queue-more").textContent = more > 0 ? t("nodes.queue_more", { n: more }) : "";
  document.body.dataset.loaded = "1";
}

poll(load, 5000).now();
