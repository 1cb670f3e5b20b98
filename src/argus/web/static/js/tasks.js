// Tasks list: GET /api/v2/tasks with the filters and the sort in the URL; the server sorts (any column) and
// pages, this page scrolls virtually: the table is as tall as every matching task, but only the rows in
// view are in the DOM (#tasks-body), fetched in blocks of BLOCK and refreshed every 5 s while the tab is
// visible (never two requests at once). Many tasks can be selected (checkboxes, shift-click for a range,
// the header box for the rows in view) to cancel them or compare them. A user with no task at all gets
// the first-run guide: the doctor task in one click, then data, then a template. A row opens its task (a click
// anywhere but its links and boxes, or Enter on the focused row; Ctrl/⌘-click: a new tab).
import { age, api, confirmDialog, duration, el, fmtDuration, fmtTime, gpus, page, poll, statusBadge, t } from "./common.js";
import { queueCell } from "./eta.js";
import { errorMessage, pendingReason, statusMessage } from "./messages.js";

const BLOCK = 100;      // rows per request
const OVERSCAN = 8;     // rows rendered above and below the view
const FRESH_MS = 5000;  // a cached block older than this is fetched again when shown
const COLS = page.is_admin ? 11 : 10;
const body = document.getElementById("tasks-body");
const scroller = document.getElementById("tasks-scroll");
const thead = document.querySelector("#tasks-table thead");
const padTop = document.querySelector("#tasks-pad-top td");
const padBottom = document.querySelector("#tasks-pad-bottom td");
const params = new URLSearchParams(location.search);
const state = {
  status: params.get("status") || "",
  workload: params.get("workload") || "",
  user: params.get("user") || "",
  q: params.get("q") || "",
  sort: params.get("sort") || "",
};
let startAt = Math.max(0, parseInt(params.get("offset") || "0", 10) || 0); // a link to row N scrolls there
let total = 0;
let rowH = 0;                 // measured from the first rendered row
let blocks = new Map();       // block number → {items, at}
let generation = 0;           // bumped by a filter/sort change: answers to older questions are dropped
const selected = new Map();   // task id → status, in the order picked (Compare keeps it)
let anchor = null;            // the index of the last box clicked (shift-click selects from it)

const fStatus = document.getElementById("f-status");
const fWorkload = document.getElementById("f-workload");
const fUser = document.getElementById("f-user");
const fQuery = document.getElementById("f-q");
fStatus.value = state.status;
fQuery.value = state.q;
fWorkload.value = state.workload;
if (fUser) fUser.value = state.user;

function syncUrl() {
  const q = new URLSearchParams();
  for (const k of ["status", "workload", "user", "q", "sort"]) if (state[k]) q.set(k, state[k]);
  history.replaceState(null, "", q.toString() ? `?${q}` : location.pathname);
}

function filtered() { return Boolean(state.status || state.workload || state.user || state.q); }

// ---- rows ----------------------------------------------------------------------------------------
/** What the reason column says: why it waits, where it runs (nodes and since when), or how it ended. */
function reasonOf(task) {
  if (task.status === "QUEUED") return pendingReason(task);
  const note = task.status_note && statusMessage(task, task.status_note);
  if ((task.status === "RUNNING" || task.status === "CANCELING") && task.started_at) {
    const where = task.nodes && task.nodes.length ? task.nodes.join(", ") : t("tasks.node_unknown");
    const run = t("tasks.running_on", { nodes: where, since: fmtTime(task.started_at) });
    return note ? `${run} · ${note}` : run;
  }
  if (task.status === "SUBMITTED") return note || t("tasks.starting");
  return note || task.termination_reason || pendingReason(task);
}

function row(task, index) {
  const reason = reasonOf(task);
  const box = el("input", { type: "checkbox", class: "tasks-pick", "data-index": index,
    "aria-label": t("tasks.sel_one", { id: task.task_id }) });
  box.checked = selected.has(task.task_id);
  box.addEventListener("click", (ev) => pick(index, box.checked, ev.shiftKey));
  const tr = el("tr", { "data-task": task.task_id, "data-index": index, class: box.checked ? "picked" : null,
    tabindex: "0" },
    el("td", { class: "mono tasks-sel" }, box,
      el("a", { href: `/tasks/${encodeURIComponent(task.task_id)}` }, task.task_id)),
    el("td", { class: "name", title: task.name || "" }, task.name || ""),
    page.is_admin ? el("td", {}, task.user) : null,
    el("td", {}, task.workload),
    el("td", {}, statusBadge(task.status), queueCell(task)),
    el("td", { class: "mono" }, gpus(task)),
    el("td", { class: "num", "data-gpu-hours": task.gpu_hours }, task.gpu_hours ? task.gpu_hours.toFixed(2) : "0"),
    el("td", { title: fmtTime(task.created_at) }, t("time.ago", { d: fmtDuration(age(task.created_at)) })),
    el("td", {}, fmtDuration(duration(task))),
    el("td", { class: "reason", title: reason }, reason),
  );
  tr.addEventListener("click", (ev) => {
    // its own links and boxes do what they do; a drag that selected text is not a click on the row
    if (ev.target.closest("a, button, input, label, select") || String(window.getSelection() || "")) return;
    openTask(task.task_id, ev.ctrlKey || ev.metaKey);
  });
  tr.addEventListener("keydown", (ev) => { if (ev.key === "Enter" && ev.target === tr) openTask(task.task_id, false); });
  return tr;
}

function openTask(taskId, newTab) {
  const url = `/tasks/${encodeURIComponent(taskId)}`;
  if (newTab) window.open(url, "_blank", "noopener"); else location.assign(url);
}

function itemAt(i) {
  const b = blocks.get(Math.floor(i / BLOCK));
  return b ? b.items[i % BLOCK] : undefined;
}

/** [first, end) of the rows in view, plus `extra` either side. Row i starts at head + i × rowH in the scroller
 * (CSS keeps every row one line tall) and the sticky header covers the top `head` pixels of the view. */
function windowRange(extra = OVERSCAN) {
  const h = rowH || 34;
  const head = thead.offsetHeight;
  const inView = Math.ceil((scroller.clientHeight - head) / h);
  // never past the end (a list that shrank under a deep scroll shows its last rows, not nothing)
  const first = Math.max(0, Math.min(Math.floor(scroller.scrollTop / h), total - inView) - extra);
  const end = Math.min(total, Math.ceil((scroller.scrollTop + scroller.clientHeight - head) / h) + extra);
  return [first, Math.max(first, end)];
}

/** Draw the rows in view. The view's height depends on what is drawn (the scroller is as tall as its content up
 * to its max-height: before the first rows it is its min-height, room for a dozen), so draw again until the
 * window no longer changes: every row of the view is there at the first paint, not only the first dozen. */
function render() {
  let [first, end] = windowRange();
  for (let pass = 0; pass < 4; pass++) {
    draw(first, end);
    const [f, e] = windowRange();
    if (f === first && e === end) break;
    [first, end] = [f, e];
  }
  const [a, z] = windowRange(0);
  document.getElementById("range").textContent =
    t("tasks.range", { from: total ? a + 1 : 0, to: Math.min(z, total), total });
  renderSelection();
}

function draw(first, end) {
  const rows = [];
  for (let i = first; i < end; i++) {
    const task = itemAt(i);
    rows.push(task ? row(task, i) : el("tr", { class: "tasks-loading", "data-index": i },
      el("td", { colspan: COLS, class: "muted" }, "…")));
  }
  body.replaceChildren(...rows);
  const real = rowH ? null : body.querySelector("tr[data-task]");
  if (real) rowH = real.getBoundingClientRect().height || 34;
  const h = rowH || 34;
  padTop.style.height = `${first * h}px`;
  padBottom.style.height = `${Math.max(0, total - end) * h}px`;
  padTop.parentElement.hidden = first === 0;
  padBottom.parentElement.hidden = end >= total;
}

// ---- fetching ------------------------------------------------------------------------------------
async function fetchBlock(n) {
  const gen = generation;
  const q = new URLSearchParams({ limit: String(BLOCK), offset: String(n * BLOCK) });
  if (state.status) q.set("status", state.status);
  if (state.workload) q.set("workload", state.workload);
  if (state.user && page.is_admin) q.set("user", state.user);
  if (state.q) q.set("q", state.q);
  if (state.sort) q.set("sort", state.sort);
  const data = await api(`/api/v2/tasks?${q}`);
  if (gen !== generation) return;
  total = data.total;
  blocks.set(n, { items: data.items, at: Date.now() });
  for (const it of data.items) if (selected.has(it.task_id)) selected.set(it.task_id, it.status);
}

/** The blocks the view needs (all of them when `all`, else only the missing or stale ones). */
function neededBlocks(all) {
  const [first, end] = windowRange();
  const last = Math.max(first, end - 1);
  const out = [];
  for (let n = Math.floor(first / BLOCK); n <= Math.floor(last / BLOCK); n++) {
    const b = blocks.get(n);
    if (all || !b || Date.now() - b.at > FRESH_MS) out.push(n);
  }
  return out;
}

async function load() {
  performance.mark("argus:tasks-fetch");
  const want = total ? neededBlocks(true) : [Math.floor(startAt / BLOCK)];
  for (const n of want) await fetchBlock(n);
  showEmpty();
  render();
  document.getElementById("updated").textContent = t("tasks.updated", { time: fmtTime(new Date().toISOString()) });
  document.body.dataset.loaded = "1";
  performance.measure("argus:tasks-render", "argus:tasks-fetch"); // read by bench/web.py
}

function showEmpty() {
  const none = total === 0;
  document.getElementById("tasks-empty").hidden = !(none && filtered());
  document.getElementById("first-run").hidden = !(none && !filtered());
  scroller.hidden = none;
  document.getElementById("bulk").hidden = none && selected.size === 0; // nothing to select: no bulk bar
}

const poller = poll(load, 5000);
// a taller or shorter view (a resized window, a phone turned) shows as many rows as now fit, at once
new ResizeObserver(() => { if (total) render(); }).observe(scroller);

let scrolling = 0;
scroller.addEventListener("scroll", () => {
  if (scrolling) return;
  scrolling = requestAnimationFrame(() => {
    scrolling = 0;
    render();
    // a part not fetched yet (or long ago): the poller fetches it (one request at a time) and draws it
    if (neededBlocks(false).length) poller.now();
  });
}, { passive: true });

// ---- sorting -------------------------------------------------------------------------------------
function renderSortHeads() {
  const name = state.sort.replace(/^-/, "") || "created";
  const desc = state.sort ? state.sort.startsWith("-") : true;
  for (const b of document.querySelectorAll(".tasks-sort")) {
    const on = b.dataset.sort === name;
    b.closest("th").setAttribute("aria-sort", on ? (desc ? "descending" : "ascending") : "none");
    b.dataset.dir = on ? (desc ? "desc" : "asc") : "";
  }
}

for (const b of document.querySelectorAll(".tasks-sort")) {
  b.addEventListener("click", () => {
    const name = b.dataset.sort;
    const cur = state.sort || "-created";
    // a new column starts ascending (newest first for time-like ones); the same column flips
    const firstDesc = ["created", "gpu_hours", "duration", "gpus"].includes(name);
    state.sort = cur.replace(/^-/, "") === name ? (cur.startsWith("-") ? name : `-${name}`) : (firstDesc ? `-${name}` : name);
    if (state.sort === "-created") state.sort = "";
    restart();
  });
}

// ---- selection and bulk actions ------------------------------------------------------------------
function pick(index, on, range) {
  const from = range && anchor !== null ? Math.min(anchor, index) : index;
  const to = range && anchor !== null ? Math.max(anchor, index) : index;
  for (let i = from; i <= to; i++) {
    const task = itemAt(i);
    if (!task) continue;
    if (on) selected.set(task.task_id, task.status); else selected.delete(task.task_id);
  }
  anchor = index;
  render();
}

function renderSelection() {
  const n = selected.size;
  document.getElementById("sel-count").textContent = n ? t("tasks.sel_count", { n }) : t("tasks.sel_none");
  document.getElementById("bulk-cancel").disabled = n === 0;
  document.getElementById("bulk-compare").disabled = n < 2;
  document.getElementById("sel-clear").disabled = n === 0;
  const [a, z] = windowRange(0);
  const shown = [];
  for (let i = a; i < z; i++) { const it = itemAt(i); if (it) shown.push(it.task_id); }
  const box = document.getElementById("sel-page");
  const picked = shown.filter((id) => selected.has(id)).length;
  box.checked = shown.length > 0 && picked === shown.length;
  box.indeterminate = picked > 0 && picked < shown.length;
}

document.getElementById("sel-page").addEventListener("click", (ev) => {
  const on = ev.target.checked;
  const [a, z] = windowRange(0);
  for (let i = a; i < z; i++) {
    const it = itemAt(i);
    if (!it) continue;
    if (on) selected.set(it.task_id, it.status); else selected.delete(it.task_id);
  }
  render();
});

document.getElementById("sel-clear").addEventListener("click", () => { selected.clear(); anchor = null; render(); });

document.getElementById("bulk-compare").addEventListener("click", () => {
  const ids = [...selected.keys()].map(encodeURIComponent).join(",");
  location.assign(`/compare?tasks=${ids}`);
});

document.getElementById("bulk-cancel").addEventListener("click", async () => {
  const ids = [...selected.keys()];
  if (!ids.length || !(await confirmDialog(t("tasks.bulk_cancel_confirm", { n: ids.length }), { danger: true }))) return;
  const out = document.getElementById("bulk-result");
  out.hidden = false;
  out.replaceChildren();
  let ok = 0;
  for (const id of ids) {  // one at a time: each answer is the API's own, reported per task
    try {
      const r = await api(`/api/v2/tasks/${encodeURIComponent(id)}/cancel`, { method: "POST" });
      ok++;
      selected.delete(id);
      out.append(el("li", { "data-task": id, "data-ok": "1" }, t("tasks.bulk_cancel_ok", { id, status: r.status })));
    } catch (e) {
      out.append(el("li", { "data-task": id, "data-ok": "0", class: "error" },
        t("tasks.bulk_cancel_failed", { id, message: errorMessage(e) })));
    }
  }
  out.prepend(el("li", { class: "tasks-bulk-sum" }, t("tasks.bulk_cancel_done", { ok, n: ids.length })));
  blocks = new Map();
  poller.now();
});

// ---- first run -----------------------------------------------------------------------------------
document.getElementById("run-doctor").addEventListener("click", async (ev) => {
  const err = document.getElementById("doctor-error");
  ev.target.disabled = true;
  err.hidden = true;
  try {
    const r = await api("/api/v2/tasks", { method: "POST", body: page.doctor_spec, contentType: "application/yaml" });
    location.assign(`/tasks/${encodeURIComponent(r.task_id)}`);
  } catch (e) {
    err.textContent = errorMessage(e);
    err.hidden = false;
    ev.target.disabled = false;
  }
});

// ---- filters -------------------------------------------------------------------------------------
function restart() {
  generation++;
  blocks = new Map();
  total = 0;
  startAt = 0;
  scroller.scrollTop = 0;
  syncUrl();
  renderSortHeads();
  poller.now();
}

function changed() {
  state.status = fStatus.value;
  state.workload = fWorkload.value;
  state.user = fUser ? fUser.value.trim() : "";
  state.q = fQuery.value.trim();
  restart();
}

fStatus.addEventListener("change", changed);
fWorkload.addEventListener("change", changed);
if (fUser) fUser.addEventListener("change", changed);
let typing = 0;
fQuery.addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(changed, 400); });
document.getElementById("filters").addEventListener("submit", (ev) => { ev.preventDefault(); changed(); });

renderSortHeads();
(async () => {
  await load();
  if (startAt && rowH) { scroller.scrollTop = startAt * rowH; render(); }
})();
