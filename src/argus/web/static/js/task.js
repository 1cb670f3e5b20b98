// One task: summary (polled while not finished), live log over SSE with a bounded window of lines,
// metric charts (uPlot), the spec views, the events timeline, Cancel (confirmed) and Clone. What the user may do
// and what state the run is in are the server's word (can_cancel, progress.stalled): the page only shows them.
import { ApiError, TERMINAL, age, alertDialog, api, confirmDialog, duration, el, fmtDuration, fmtTime, page, poll, setText, statusBadge, t } from "./common.js";
import { startCharts } from "./charts.js";
import { renderEta } from "./eta.js";
import { errorMessage, eventMessage, failureHint, failureKind, pendingReason, statusMessage } from "./messages.js";
import { startLog } from "./logpane.js";
import { startResources } from "./resources.js";
import { startCheckpoints } from "./checkpoints.js";
import { startRerun } from "./rerun.js";
import { warningTexts } from "./messages.js";

const id = page.task_id;
const base = `/api/v2/tasks/${encodeURIComponent(id)}`;
let task = null;

// ---- summary -------------------------------------------------------------------------------
function renderSummary(tk) {
  const changed = task !== null && task.status !== tk.status;
  task = tk;
  if (changed && activeTab === "events") loadEvents(); // the timeline grows with each status change
  setText("t-name", tk.name || tk.task_id);
  document.getElementById("t-status").replaceChildren(statusBadge(tk.status));
  document.body.dataset.status = tk.status;
  setText("s-user", tk.user);
  setText("s-workload", `${tk.workload} (${tk.kind})`);
  setText("s-gpus", `${tk.nnodes} × ${tk.n_gpus_per_node}`);
  setText("s-priority", tk.priority);
  setText("s-created", fmtTime(tk.created_at));
  setText("s-started", tk.started_at ? fmtTime(tk.started_at) : "");
  setText("s-finished", tk.finished_at ? fmtTime(tk.finished_at) : "");
  setText("s-duration", fmtDuration(duration(tk)));
  setText("s-gpu-hours", (tk.gpu_hours || 0).toFixed(2));
  const last = tk.attempts.length ? tk.attempts[tk.attempts.length - 1] : null;
  setText("s-node", last ? (last.hostname || last.node_id || "") : "");
  setText("s-attempts", tk.attempts.length);
  setText("s-reason", tk.termination_reason || (tk.pending_reason ? t("task.waiting") : ""));
  setText("s-message", statusMessage(tk) || pendingReason(tk));
  setText("s-hint", tk.failure_hint ? `${failureKind(tk.failure_kind)}: ${failureHint(tk)}` : "");
  document.getElementById("s-warnings").replaceChildren(...warningTexts(tk).map((w) => el("li", {}, w)));
  document.getElementById("cancel").hidden = !tk.can_cancel;
  const dashboard = document.getElementById("ray-dashboard");  // rendered when the server runs task dashboards
  if (dashboard) dashboard.hidden = tk.status !== "RUNNING";  // the API answers 409 otherwise
  renderAttempts(tk);
  renderEta(tk); // issue 24: queue position and ETA, or progress (eta.js)
  renderStall(tk);
  renderWaiting(tk);
}

/** A run the server found stalled: "Stalled" beside its status and how long it has been without a step. */
function renderStall(tk) {
  const p = tk.status === "RUNNING" ? tk.progress : null;
  const on = Boolean(p && p.stalled);
  document.getElementById("t-stalled").hidden = !on;
  const note = document.getElementById("p-stalled");
  note.hidden = !on;
  if (!on) return;
  const last = tk.attempts.length ? tk.attempts[tk.attempts.length - 1] : null;
  const since = p.last_step_at || (last && last.started_at) || tk.started_at;
  const d = since ? fmtDuration(age(since)) : "?";
  note.textContent = p.last_step_at ? t("task.stalled_since_step", { d, step: p.step ?? "?" }) : t("task.stalled_no_step", { d });
}

/** A queued task has no log yet: why it waits, and that its log starts when it runs (not an empty box). */
function renderWaiting(tk) {
  const waiting = tk.status === "QUEUED";
  const box = document.getElementById("log-waiting");
  box.hidden = !waiting;
  if (waiting) {
    const reason = pendingReason(tk);
    box.textContent = reason ? t("task.queued_log", { reason }) : t("task.queued_log_plain");
  }
  // a retried task keeps its earlier attempts' log in view; a first wait has none to show
  document.getElementById("log").hidden = waiting && tk.attempts.length === 0;
}

const summaryPoll = poll(async () => {
  const tk = await api(base);
  renderSummary(tk);
  if (TERMINAL.has(tk.status)) summaryPoll.stop();
}, 3000);

document.getElementById("cancel").addEventListener("click", async () => {
  if (!(await confirmDialog(t("task.cancel_confirm", { id }), { danger: true }))) return;
  try {
    await api(`${base}/cancel`, { method: "POST" });
  } catch (e) {
    await alertDialog(errorMessage(e));
  }
  summaryPoll.now();
});

// ---- log: a window over the whole file, live follow, filter and search (logpane.js) -----------
const logPane = startLog(base, id, { onEnd: () => summaryPoll.now() });
function renderAttempts(tk) { logPane.attempts(tk); }

// ---- tabs: metrics, spec, events -------------------------------------------------------------
let charts = null;
let resources = null;
const checkpoints = startCheckpoints(base, id, () => task && TERMINAL.has(task.status));
const rerun = startRerun(base);
let activeTab = "log";
const loaded = new Set();
for (const tab of document.querySelectorAll("#tabs .tab")) {
  tab.addEventListener("click", () => {
    for (const o of document.querySelectorAll("#tabs .tab")) o.classList.toggle("active", o === tab);
    for (const pane of document.querySelectorAll(".tabpane")) pane.hidden = pane.dataset.pane !== tab.dataset.tab;
    const name = tab.dataset.tab;
    activeTab = name;
    if (name === "metrics" && !charts) charts = startCharts(base, () => task && TERMINAL.has(task.status));
    if (name === "resources" && !resources) resources = startResources(base, () => task && TERMINAL.has(task.status));
    if (name === "checkpoints") checkpoints.open();
    if (name === "spec" && !loaded.has("spec")) { loaded.add("spec"); loadSpec(); }
    if (name === "events") loadEvents();
  });
}

let spec = null;
async function loadSpec() {
  spec = await api(`${base}/spec`);
  showSpec("raw");
  rerun.open(spec.resolved && spec.resolved.env);
}
function showSpec(which) {
  for (const b of document.querySelectorAll("#spec-tabs .tab")) b.classList.toggle("active", b.dataset.spec === which);
  let v = spec ? spec[which] : "";
  if (which === "argv" && Array.isArray(v)) v = v.map((a, i) => `[${i}] ${a}`).join("\n");
  else if (v && typeof v === "object") v = JSON.stringify(v, null, 2);
  document.getElementById("spec").textContent = v || "—";
}
for (const b of document.querySelectorAll("#spec-tabs .tab")) b.addEventListener("click", () => showSpec(b.dataset.spec));

async function loadEvents() {
  const events = await api(`${base}/events`);
  document.getElementById("events").replaceChildren(...events.map((e) => el("li", {},
    el("time", { datetime: e.at }, fmtTime(e.at)), " ",
    e.from_status ? statusBadge(e.from_status) : null, e.from_status ? " → " : null, statusBadge(e.to_status),
    " ", el("span", { class: "muted" }, t("task.by", { actor: e.actor })),
    e.reason ? el("div", { class: "reason" }, e.reason) : null,
    e.message ? el("div", { class: "message" }, eventMessage(e)) : null)));
}

summaryPoll.now();
