// The Compare page (/compare?tasks=a,b,…; the URL is the thing to share): the tasks' metrics overlaid
// on shared charts (one colour per task, the task page's smoothing / x axis / log options) and their
// specs side by side. Which rows differ is decided by the server (GET /api/v2/compare: overrides
// aligned by Hydra key, `differs` per row); this page only draws it, identical rows folded away.
import { api, copyText, el, poll, statusBadge, t, TERMINAL } from "./common.js";
import { Board, COLORS } from "./charts.js";
import { startCompareLink } from "./compare_link.js";

const ids = (new URLSearchParams(location.search).get("tasks") || "").split(",").map((s) => s.trim()).filter(Boolean);
const SECTIONS = { override: () => t("compare.section_override"), spec: () => t("compare.section_spec"),
  command: () => t("compare.section_command") };
const problem = document.getElementById("compare-problem");

function showProblem(err) {
  problem.hidden = false;
  problem.replaceChildren(el("p", {}, err.message),
    ...(err.errors || []).map((e) => el("p", { class: "compare-missing", "data-value": String(e.value) },
      `${e.field} = ${e.value}: ${e.message}`)));
}

function setTasks(tasks) {
  // the chart view (hash) changes after this is drawn: the link takes the current one when clicked
  const url = (keep) => `/compare?tasks=${keep.map(encodeURIComponent).join(",")}${location.hash}`;
  document.getElementById("compare-tasks").replaceChildren(...tasks.map((x, i) => el("li", { "data-task": x.task_id },
    el("span", { class: "compare-swatch", style: `background:${COLORS[i % COLORS.length]}` }),
    el("a", { href: `/tasks/${encodeURIComponent(x.task_id)}` }, x.name || x.task_id), " ",
    el("span", { class: "muted mono" }, x.task_id), " ", statusBadge(x.status),
    tasks.length > 1 ? el("a", { class: "compare-drop", title: t("compare.remove"),
      href: url(tasks.filter((o) => o !== x).map((o) => o.task_id)),
      onclick: (e) => { e.currentTarget.href = url(tasks.filter((o) => o !== x).map((o) => o.task_id)); } }, "×") : null)));
}

function renderDiff(tasks, rows) {
  const head = el("tr", {}, el("th", {}, t("compare.key")), ...tasks.map((x, i) => el("th", {},
    el("span", { class: "compare-swatch", style: `background:${COLORS[i % COLORS.length]}` }), x.name || x.task_id)));
  document.getElementById("compare-head").replaceChildren(head);
  const body = [];
  let section = null;
  for (const r of rows) {
    if (r.section !== section) {
      section = r.section;
      body.push(el("tr", { class: "compare-section" }, el("th", { colspan: String(tasks.length + 1) }, (SECTIONS[section] ? SECTIONS[section]() : section))));
    }
    body.push(el("tr", { class: r.differs ? "compare-differs" : "compare-same", "data-key": r.key, "data-section": r.section },
      el("td", { class: "mono" }, r.key),
      ...r.values.map((v) => (v === null ? el("td", { class: "muted compare-unset" }, t("compare.unset")) : el("td", { class: "mono" }, v)))));
  }
  document.getElementById("compare-body").replaceChildren(...body);
  const differs = rows.filter((r) => r.differs).length;
  document.getElementById("compare-diff-count").textContent = t("compare.diff_count", { n: differs, total: rows.length });
  document.getElementById("compare-same-label").textContent = t("compare.show_same", { n: rows.length - differs });
}

const table = document.getElementById("compare-diff");
const same = document.getElementById("compare-same");
same.addEventListener("change", () => table.classList.toggle("compare-show-same", same.checked));
document.getElementById("compare-copy").addEventListener("click", async (e) => {
  await copyText(location.href);
  e.target.textContent = t("compare.copied");
});

async function start() {
  let cmp;
  try {
    cmp = await api(`/api/v2/compare?tasks=${ids.map(encodeURIComponent).join(",")}`);
  } catch (err) {
    showProblem(err);
    return;
  }
  setTasks(cmp.tasks);
  startCompareLink(cmp.tasks.map((x) => x.task_id));
  renderDiff(cmp.tasks, cmp.rows);
  const board = new Board({ scope: "compare", tools: document.getElementById("chart-tools"),
    picker: document.getElementById("chart-picker"), box: document.getElementById("charts") });
  async function refresh() {
    const all = await Promise.all(cmp.tasks.map((x) => api(`/api/v2/tasks/${encodeURIComponent(x.task_id)}/metrics${board.query()}`)));
    const keys = [...new Set(all.flatMap((m) => m.keys))].sort();
    document.getElementById("metrics-empty").hidden = keys.length > 0;
    board.setSources(cmp.tasks.map((x, i) => ({ id: x.task_id, label: x.name ? `${x.name} (${x.task_id})` : x.task_id,
      metrics: all[i] })), keys);
  }
  const live = cmp.tasks.some((x) => !TERMINAL.has(x.status));
  const poller = poll(refresh, 10000);
  await poller.now();
  if (!live) poller.stop();
  const now = () => refresh().catch((e) => console.warn(e));
  board.box._refresh = now;
  board.onKeyAdded = now; // a finished run's new key is fetched once, not polled
}

start();
