// The Compare page (/compare?tasks=a,b,…; the URL is the thing to share): the tasks' metrics overlaid
// on shared charts (one colour per task, the task page's smoothing / x axis / log options) and their
// specs side by side. Which rows differ is decided by the server (GET /api/v2/compare: overrides
// aligned by Hydra key, `differs` per row); this page only draws it, identical rows folded away.
// An id the server cannot show (unknown, or someone else's: `missing`, each with a code) is named in a
// notice and the other runs are compared; a run whose metrics cannot be read is named too, and charted
// without them — one bad id never blanks the page.
import { api, copyText, el, poll, statusBadge, t, TERMINAL } from "./common.js";
import { Board, COLORS } from "./charts.js";
import { startCompareLink } from "./compare_link.js";
import { errorMessage, fieldMessage } from "./messages.js";

const ids = (new URLSearchParams(location.search).get("tasks") || "").split(",").map((s) => s.trim()).filter(Boolean);
const SECTIONS = { override: () => t("compare.section_override"), spec: () => t("compare.section_spec"),
  command: () => t("compare.section_command") };
const problem = document.getElementById("compare-problem");
const notice = document.getElementById("compare-notice");
// Why an id is not shown, by the server's code, in the page's language; an unknown code shows the server's text.
const MISSING = { task_not_found: (id) => t("compare.missing_task_not_found", { id }) };

function showProblem(err) {
  problem.hidden = false;
  problem.replaceChildren(el("p", {}, errorMessage(err)),
    ...(err.errors || []).map((e) => el("p", { class: "compare-missing", "data-value": String(e.value) },
      `${e.field} = ${e.value}: ${fieldMessage(e)}`)));
}

// The ids not shown and why, with a link to the comparison without them; then any run whose metrics failed.
function showMissing(missing, tasks, failed) {
  const rows = missing.map((m) => el("p", { class: "compare-missing", "data-value": m.task_id, "data-code": m.code },
    MISSING[m.code] ? MISSING[m.code](m.task_id) : `${m.task_id}: ${m.message}`));
  if (missing.length) {
    const keep = `/compare?tasks=${tasks.map((x) => encodeURIComponent(x.task_id)).join(",")}`;
    rows.push(el("p", {}, el("a", { id: "compare-drop-missing", href: keep,
      onclick: (e) => { e.currentTarget.href = keep + location.hash; } }, t("compare.drop_missing"))));
  }
  for (const [id, err] of failed) {
    rows.push(el("p", { class: "compare-metrics-failed", "data-value": id }, t("compare.metrics_failed", { id, error: errorMessage(err) })));
  }
  notice.hidden = rows.length === 0;
  notice.replaceChildren(...rows);
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
  showMissing(cmp.missing || [], cmp.tasks, []);
  setTasks(cmp.tasks);
  startCompareLink(cmp.tasks.map((x) => x.task_id));
  renderDiff(cmp.tasks, cmp.rows);
  const board = new Board({ scope: "compare", tools: document.getElementById("chart-tools"),
    picker: document.getElementById("chart-picker"), box: document.getElementById("charts") });
  async function refresh() {
    const got = await Promise.allSettled(cmp.tasks.map((x) => api(`/api/v2/tasks/${encodeURIComponent(x.task_id)}/metrics${board.query()}`)));
    const all = got.map((r, i) => (r.status === "fulfilled" ? r.value
      : { task_id: cmp.tasks[i].task_id, keys: [], last_step: null, points: {}, times: {}, units: {} }));
    showMissing(cmp.missing || [], cmp.tasks, got.flatMap((r, i) => (r.status === "rejected" ? [[cmp.tasks[i].task_id, r.reason]] : [])));
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
  // a key added: its points only, for each run (a finished run's are fetched once, not polled)
  board.fetchKey = (id, query) => api(`/api/v2/tasks/${encodeURIComponent(id)}/metrics${query}`);
}

start();
