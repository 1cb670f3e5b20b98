// Data page: a file browser over GET/PUT/POST/DELETE /api/v2/files (the layout SFTP shows).
// The folder is in the URL (?path=); the server decides what exists and what is writable
// (common/ is read-only: its listing says writable=false and the controls go away).
// Uploads live in data_uploads.js, the virtual rows in data_vlist.js. The name filter and the
// selection work on the sorted, filtered list (``state.view``), never on the rows in the DOM, so
// they hold for rows scrolled out of it. Bulk move and delete are one request per item through the
// same endpoints as the single actions (the server keeps every path rule), four at a time, and
// every item gets its own result line.
import { api, confirmDialog, copyText, el, fmtBytes, fmtTime, page, promptDialog, t } from "./common.js";
import { busy as uploadsBusy, cancelAll, clearStopped, enqueue, quotaFor } from "./data_uploads.js";
import { VirtualRows } from "./data_vlist.js";
import { errorMessage } from "./messages.js";

const params = new URLSearchParams(location.search);
const state = {
  path: normalize(params.get("path") || "/"), sort: "name", desc: false, entries: [], writable: false,
  filter: "", view: [], selected: new Set(), anchor: -1,
};
const body = document.getElementById("files-body");
const rows = new VirtualRows(document.getElementById("files-scroll"), body, row);
const errorBox = document.getElementById("data-error");
const IMAGE = /\.(png|jpe?g|gif|webp|svg|bmp)$/i;

function normalize(p) {
  const parts = String(p).split("/").filter((s) => s && s !== ".");
  return "/" + parts.join("/");
}

function join(dir, name) {
  return dir === "/" ? `/${name}` : `${dir}/${name}`;
}

/** The path a task spec uses for this file ($HOME is the user's SFTP root). */
export function homePath(vpath) {
  return vpath === "/" ? "$HOME" : `$HOME${vpath}`;
}

function contentUrl(vpath) {
  return `/api/v2/files/content?path=${encodeURIComponent(vpath)}`;
}

function showError(e) {
  errorBox.hidden = !e;
  errorBox.textContent = e ? errorMessage(e) : "";
}

function toast(text) {
  const node = document.getElementById("toast");
  node.textContent = text;
  node.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { node.hidden = true; }, 6000);
}

// ------------------------------------------------------------------ listing

function crumbs() {
  const nav = document.getElementById("crumbs");
  const parts = state.path.split("/").filter(Boolean);
  const items = [el("a", { href: "?path=%2F", "data-path": "/", onclick: go }, "$HOME")];
  parts.forEach((name, i) => {
    const p = "/" + parts.slice(0, i + 1).join("/");
    items.push(el("span", { class: "sep" }, "/"), el("a", { href: `?path=${encodeURIComponent(p)}`, "data-path": p, onclick: go }, name));
  });
  nav.replaceChildren(...items);
}

function go(ev) {
  ev.preventDefault();
  open(ev.currentTarget.dataset.path);
}

function open(path) {
  const next = normalize(path);
  if (next !== state.path) {
    setFilter("");
    document.getElementById("files-scroll").scrollTop = 0;
  }
  state.path = next;
  history.pushState(null, "", `?path=${encodeURIComponent(state.path)}`);
  closePreview();
  load();
}

window.addEventListener("popstate", () => {
  state.path = normalize(new URLSearchParams(location.search).get("path") || "/");
  load();
});

function sorted(entries) {
  const k = state.sort, dir = state.desc ? -1 : 1;
  return [...entries].sort((a, b) => {
    if ((a.type === "dir") !== (b.type === "dir")) return a.type === "dir" ? -1 : 1;
    const x = k === "name" ? a.name.localeCompare(b.name) : (a[k] - b[k]) || a.name.localeCompare(b.name);
    return x * dir;
  });
}

/** The platform's own folders shown in every home (/common, /teams): listed, never changed or sized. */
const SYNTHETIC = new Set(["/common", "/teams"]);

/** The server's own word on each entry (``actions``): what it will rename or delete, nothing more. */
const may = (e, action) => (e.actions || []).includes(action);

function selectable(e) {
  return state.writable && may(e, "delete");
}

function row(e, index) {
  const isDir = e.type === "dir";
  const nameCell = isDir
    ? el("a", { href: `?path=${encodeURIComponent(e.path)}`, "data-path": e.path, class: "dir", onclick: go }, e.name + "/")
    : el("button", { type: "button", class: "link fname", onclick: () => preview(e) }, e.name);
  const actions = [
    el("button", { type: "button", class: "copy-path", title: homePath(e.path), onclick: () => copyPath(e) }, t("data.copy_path")),
  ];
  if (e.type === "file") actions.push(el("a", { class: "button download", href: contentUrl(e.path), download: e.name }, t("data.download")));
  if (isDir && !SYNTHETIC.has(e.path)) {
    actions.push(el("a", { class: "button download-dir", href: `/api/v2/files/archive?path=${encodeURIComponent(e.path)}`,
      download: `${e.name}.tar` }, t("data.download_tar")));
  }
  if (may(e, "rename")) actions.push(el("button", { type: "button", class: "rename", onclick: () => rename(e) }, t("data.rename")));
  if (may(e, "delete")) actions.push(el("button", { type: "button", class: "delete", onclick: () => remove(e) }, t("data.delete")));
  const picked = state.selected.has(e.path);
  const box = selectable(e)
    ? el("input", { type: "checkbox", class: "data-pick", checked: picked, "aria-label": t("data.select_one", { name: e.name }),
      onclick: (ev) => pick(index, ev.currentTarget.checked, ev.shiftKey) })
    : null;
  return el("tr", { "data-name": e.name, "data-type": e.type, class: picked ? "data-picked" : null },
    el("td", { class: "data-sel" }, box),
    el("td", { class: "name", title: e.name }, nameCell, e.type === "symlink" ? el("span", { class: "muted" }, " → ?") : null),
    el("td", { class: "num" }, !isDir ? fmtBytes(e.size) : SYNTHETIC.has(e.path) ? "—" : e.summary ? sizeText(e.summary)
      : el("button", { type: "button", class: "link dir-size", onclick: (ev) => folderSize(e, ev.currentTarget) }, t("data.size_count"))),
    el("td", {}, fmtTime(new Date(e.mtime * 1000).toISOString())),
    el("td", { class: "actions" }, actions));
}

/** A folder's size on demand: walking a tree is not cheap enough to do for every row of every listing. */
async function folderSize(e, button) {
  button.disabled = true;
  try {
    e.summary = await api(`/api/v2/files/summary?path=${encodeURIComponent(e.path)}`); // kept: rows are redrawn
    button.replaceWith(sizeText(e.summary));
  } catch (err) { button.disabled = false; showError(err); }
}

function sizeText(s) {
  return `${s.truncated ? "≥ " : ""}${fmtBytes(s.bytes)} · ${t("data.n_files", { n: s.files })}`;
}

function render() {
  const needle = state.filter.toLowerCase();
  state.view = sorted(state.entries).filter((e) => !needle || e.name.toLowerCase().includes(needle));
  const visible = new Set(state.view.map((e) => e.path));
  for (const p of state.selected) if (!visible.has(p)) state.selected.delete(p); // act only on what is shown
  rows.set(state.view);
  document.getElementById("files-empty").hidden = state.entries.length > 0;
  document.getElementById("data-shown").textContent = state.filter
    ? t("data.filter_shown", { n: state.view.length, total: state.entries.length }) : "";
  selectionChanged();
  for (const b of document.querySelectorAll("button.sort")) {
    b.classList.toggle("active", b.dataset.sort === state.sort);
    b.dataset.dir = b.dataset.sort === state.sort ? (state.desc ? "desc" : "asc") : "";
  }
}

async function load() {
  crumbs();
  try {
    const data = await api(`/api/v2/files?path=${encodeURIComponent(state.path)}`);
    if (data.type !== "dir") { // a file's address: show its folder with the file previewed
      const parent = state.path.replace(/\/[^/]*$/, "") || "/";
      state.path = parent;
      history.replaceState(null, "", `?path=${encodeURIComponent(parent)}`);
      await load();
      preview(data);
      return;
    }
    state.entries = data.entries;
    state.writable = data.writable && !SYNTHETIC.has(state.path);
    showError(null);
  } catch (e) {
    state.entries = [];
    state.writable = false;
    showError(e);
  }
  document.getElementById("write-tools").hidden = !state.writable;
  document.getElementById("data-select-all").hidden = !state.writable;
  state.anchor = -1;
  document.getElementById("readonly-note").hidden = state.writable || !!errorBox.textContent;
  render();
  document.body.dataset.loaded = state.path;
  quota();
}

for (const b of document.querySelectorAll("button.sort")) {
  b.addEventListener("click", () => {
    if (state.sort === b.dataset.sort) state.desc = !state.desc;
    else { state.sort = b.dataset.sort; state.desc = b.dataset.sort !== "name"; }
    render();
  });
}

// ------------------------------------------------------------------ actions

async function copyPath(e) {
  const text = homePath(e.path);
  const ok = await copyText(text);
  document.body.dataset.copied = text;
  toast(ok ? t("data.copied", { path: text }) : text);
}

document.getElementById("copy-sftp").addEventListener("click", async () => {
  await copyText(page.sftp);
  toast(t("data.copied", { path: page.sftp }));
});

document.getElementById("mkdir").addEventListener("click", async () => {
  const name = await promptDialog(t("data.mkdir_prompt"));
  if (!name) return;
  try {
    await api("/api/v2/files/mkdir", { method: "POST", body: { path: join(state.path, name) } });
    await load();
  } catch (e) { showError(e); }
});

async function rename(e) {
  const to = await promptDialog(t("data.rename_prompt", { name: e.name }), e.name);
  if (!to || to === e.name) return;
  const dst = to.startsWith("/") ? to : join(state.path, to);
  try {
    await api("/api/v2/files/move", { method: "POST", body: { src: e.path, dst } });
    await load();
  } catch (err) { showError(err); }
}

async function remove(e) {
  try {
    let question = t("data.confirm_delete_file", { name: e.name });
    if (e.type === "dir") {
      const s = await api(`/api/v2/files/summary?path=${encodeURIComponent(e.path)}`);
      const v = { name: e.name, files: s.files, dirs: s.dirs, size: fmtBytes(s.bytes) };
      question = s.truncated ? t("data.confirm_delete_dir_many", v) : t("data.confirm_delete_dir", v);
    }
    if (!(await confirmDialog(question, { danger: true }))) return;
    await api(`/api/v2/files?path=${encodeURIComponent(e.path)}&recursive=${e.type === "dir"}`, { method: "DELETE" });
    await load();
  } catch (err) { showError(err); }
}

// ------------------------------------------------------------------ preview

function closePreview() {
  document.getElementById("preview").hidden = true;
  document.getElementById("pv-body").replaceChildren();
}
document.getElementById("pv-close").addEventListener("click", closePreview);

async function preview(e) {
  const box = document.getElementById("preview"), out = document.getElementById("pv-body");
  document.getElementById("pv-name").textContent = homePath(e.path);
  document.getElementById("pv-meta").textContent = fmtBytes(e.size);
  box.hidden = false;
  box.dataset.kind = "";
  if (IMAGE.test(e.name)) {
    out.replaceChildren(el("img", { src: contentUrl(e.path), alt: e.name, class: "pv-image" }));
    box.dataset.kind = "image";
    return;
  }
  out.replaceChildren(el("p", { class: "muted" }, t("data.loading")));
  try {
    const p = await api(`/api/v2/files/preview?path=${encodeURIComponent(e.path)}`);
    if (p.kind === "parquet") out.replaceChildren(...parquetView(p).flat().filter(Boolean));
    else if (p.kind === "text") {
      out.replaceChildren(el("pre", { class: "pv-text mono" }, p.lines.join("\n")));
      if (p.truncated) out.append(el("p", { class: "hint" }, t("data.preview_truncated", { n: p.lines.length })));
    } else out.replaceChildren(el("p", { class: "muted" }, t("data.preview_binary")));
    box.dataset.kind = p.kind;
  } catch (err) {
    out.replaceChildren(el("p", { class: "error" }, errorMessage(err)));
    box.dataset.kind = "error";
  }
}

function parquetView(p) {
  const verl = new Set(p.verl_columns);
  const isVerl = (name) => verl.has(name);
  const schema = el("table", { class: "tasks schema" },
    el("thead", {}, el("tr", {}, el("th", {}, t("data.col_column")), el("th", {}, t("data.col_type")))),
    el("tbody", {}, p.columns.map((c) => el("tr", { class: isVerl(c.name) ? "verl" : "", "data-column": c.name },
      el("td", { class: "mono" }, c.name, isVerl(c.name) ? el("span", { class: "badge verl-badge" }, "verl") : null),
      el("td", { class: "mono" }, c.type)))));
  const names = p.columns.map((c) => c.name);
  const rows = el("table", { class: "tasks rows" },
    el("thead", {}, el("tr", {}, names.map((n) => el("th", { class: isVerl(n) ? "verl" : "" }, n)))),
    el("tbody", {}, p.rows.map((r) => el("tr", {}, names.map((n) => el("td", { class: "mono cell" }, r[n] ?? ""))))));
  return [
    el("p", { id: "pv-rows" }, t("data.parquet_summary", { rows: p.num_rows, cols: p.columns.length, groups: p.num_row_groups })),
    el("p", { class: "hint" }, p.verl_columns.length ? t("data.verl_columns", { cols: p.verl_columns.join(", ") }) : t("data.verl_none")),
    el("h4", {}, t("data.schema")), schema,
    p.rows_skipped ? el("p", { class: "hint" }, t("data.rows_skipped"))
      : [el("h4", {}, t("data.first_rows", { n: p.rows.length })), el("div", { class: "scroll" }, rows)],
  ];
}

// ------------------------------------------------------------------ filter and selection

function setFilter(value) {
  state.filter = value;
  document.getElementById("data-filter").value = value;
}

document.getElementById("data-filter").addEventListener("input", (ev) => {
  state.filter = ev.currentTarget.value;
  state.anchor = -1;
  render();
  document.body.dataset.filtered = String(state.view.length);
});

/** A click on row ``index``'s box; with Shift, every row from the last clicked one takes its state. */
function pick(index, on, range) {
  const from = range && state.anchor >= 0 ? Math.min(state.anchor, index) : index;
  const to = range && state.anchor >= 0 ? Math.max(state.anchor, index) : index;
  for (let i = from; i <= to; i++) {
    const e = state.view[i];
    if (!e || !selectable(e)) continue;
    if (on) state.selected.add(e.path);
    else state.selected.delete(e.path);
  }
  state.anchor = index;
  rows.draw(true);
  selectionChanged();
}

document.getElementById("data-select-all").addEventListener("click", (ev) => {
  const on = ev.currentTarget.checked;
  for (const e of state.view) if (selectable(e)) (on ? state.selected.add(e.path) : state.selected.delete(e.path));
  rows.draw(true);
  selectionChanged();
});

document.getElementById("data-bulk-clear").addEventListener("click", () => {
  state.selected.clear();
  rows.draw(true);
  selectionChanged();
});

function selectionChanged() {
  const n = state.selected.size;
  const all = state.view.filter(selectable).length;
  const head = document.getElementById("data-select-all");
  head.checked = n > 0 && n === all;
  head.indeterminate = n > 0 && n < all;
  document.getElementById("data-bulk").hidden = n === 0;
  document.getElementById("data-bulk-count").textContent = t("data.bulk_selected", { n });
  document.body.dataset.selected = String(n);
  const folders = new Set(["/", state.path.replace(/\/[^/]*$/, "") || "/",
    ...state.entries.filter((e) => e.type === "dir" && e.writable).map((e) => e.path),
    "/datasets", "/models", "/code"]);
  document.getElementById("data-bulk-folders").replaceChildren(...[...folders].map((p) => el("option", { value: p })));
}

// ------------------------------------------------------------------ bulk actions

/** Run ``job`` on every item, four at a time, collecting [item, error-or-null] in order. */
async function eachItem(items, job) {
  const out = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      try { await job(items[i]); out[i] = [items[i], null]; } catch (err) { out[i] = [items[i], err]; }
    }
  };
  await Promise.all(Array.from({ length: Math.min(4, items.length) }, worker));
  return out;
}

function report(kind, results, summary) {
  const ok = results.filter(([, err]) => !err).length;
  document.getElementById("data-bulk-summary").textContent = summary(ok, results.length);
  document.getElementById("data-bulk-list").replaceChildren(...results.map(([e, err]) =>
    el("li", { "data-path": e.path, "data-result": err ? "failed" : "ok", class: err ? "error" : "" },
      el("span", { class: "mono" }, e.name), " — ", err ? errText(err) : t("data.bulk_ok"))));
  document.getElementById("data-bulk-results").hidden = false;
  document.body.dataset.bulk = `${kind}:${ok}/${results.length}`;
}

function errText(err) {
  return errorMessage(err);
}

function chosen() {
  return state.view.filter((e) => state.selected.has(e.path));
}

document.getElementById("data-bulk-results-close").addEventListener("click", () => {
  document.getElementById("data-bulk-results").hidden = true;
});

document.getElementById("data-bulk-delete").addEventListener("click", async () => {
  const items = chosen();
  if (!items.length) return;
  const dirs = items.filter((e) => e.type === "dir").length;
  const names = items.slice(0, 5).map((e) => e.name).join(", ") + (items.length > 5 ? ", …" : "");
  if (!(await confirmDialog(t("data.bulk_confirm_delete", { n: items.length, dirs, names }), { danger: true }))) return;
  const results = await eachItem(items, (e) =>
    api(`/api/v2/files?path=${encodeURIComponent(e.path)}&recursive=${e.type === "dir"}`, { method: "DELETE" }));
  state.selected.clear();
  report("delete", results, (ok, n) => t("data.bulk_delete_summary", { ok, n }));
  await load();
});

document.getElementById("data-bulk-move").addEventListener("click", async () => {
  const items = chosen();
  const input = document.getElementById("data-bulk-dest");
  const typed = input.value.trim();
  if (!items.length) return;
  if (!typed) { showError(new Error(t("data.bulk_dest_missing"))); input.focus(); return; }
  const dest = normalize(typed.startsWith("/") ? typed : join(state.path, typed));
  try { // the target must be a folder you have: the server says which, and why not
    const info = await api(`/api/v2/files?path=${encodeURIComponent(dest)}`);
    if (info.type !== "dir") throw new Error(t("data.bulk_dest_not_dir", { dest }));
  } catch (err) {
    showError(new Error(t("data.bulk_dest_bad", { dest, why: errText(err) })));
    input.focus();
    return;
  }
  showError(null);
  const results = await eachItem(items, (e) =>
    api("/api/v2/files/move", { method: "POST", body: { src: e.path, dst: join(dest, e.name) } }));
  state.selected.clear();
  report("move", results, (ok, n) => t("data.bulk_move_summary", { ok, n, dest }));
  await load();
});

// ------------------------------------------------------------------ quota bar

/** Used of quota from GET /api/v2/files/usage; its ``level`` (the server's call) colours the bar. */
async function quota() {
  const box = document.getElementById("data-quota");
  let u;
  try { u = await api("/api/v2/files/usage"); } catch { box.hidden = true; return; }
  u = quotaFor(u, state.path);
  const fill = document.getElementById("data-quota-fill");
  const bar = document.getElementById("data-quota-bar");
  box.hidden = false;
  box.dataset.level = u.level || "ok";
  if (u.quota_bytes === null || u.quota_bytes === undefined) {
    bar.hidden = true;
    document.getElementById("data-quota-text").textContent = t("data.quota_none", { used: fmtBytes(u.used_bytes) });
    return;
  }
  const pct = u.quota_bytes > 0 ? Math.min(100, (u.used_bytes * 100) / u.quota_bytes) : 100;
  bar.hidden = false;
  bar.setAttribute("aria-valuenow", String(Math.round(pct)));
  fill.style.width = `${pct}%`;
  document.getElementById("data-quota-text").textContent = t("data.quota_used", {
    used: fmtBytes(u.used_bytes), quota: fmtBytes(u.quota_bytes), pct: pct < 10 ? pct.toFixed(1) : Math.round(pct) });
}

// ------------------------------------------------------------------ uploads

const host = {
  names: () => state.entries.map((e) => e.name),
  folder: () => state.path,
  reload: () => load(),
  error: showError,
};

document.getElementById("up-cancel-all").addEventListener("click", cancelAll);
document.getElementById("up-clear").addEventListener("click", clearStopped);

function picked(input) {
  const files = [...input.files].map((f) => ({ file: f, rel: f.webkitRelativePath || f.name }));
  input.value = "";
  enqueue(files, host);
}
const fileInput = document.getElementById("file-input"), folderInput = document.getElementById("folder-input");
document.getElementById("pick-files").addEventListener("click", () => fileInput.click());
document.getElementById("pick-folder").addEventListener("click", () => folderInput.click());
fileInput.addEventListener("change", () => picked(fileInput));
folderInput.addEventListener("change", () => picked(folderInput));

// Drag and drop: files, and folders walked through the entries API (their structure is kept).
async function walkEntry(entry, prefix, out) {
  if (entry.isFile) {
    const file = await new Promise((res, rej) => entry.file(res, rej));
    out.push({ file, rel: prefix + entry.name });
  } else if (entry.isDirectory) {
    const reader = entry.createReader();
    for (;;) {
      const batch = await new Promise((res, rej) => reader.readEntries(res, rej));
      if (!batch.length) break;
      for (const child of batch) await walkEntry(child, `${prefix}${entry.name}/`, out);
    }
  }
}

const zone = document.getElementById("dropzone");
zone.addEventListener("dragover", (ev) => {
  if (!state.writable) return;
  ev.preventDefault();
  zone.classList.add("over");
});
zone.addEventListener("dragleave", () => zone.classList.remove("over"));
zone.addEventListener("drop", async (ev) => {
  ev.preventDefault();
  zone.classList.remove("over");
  if (!state.writable) return;
  const entries = [...ev.dataTransfer.items].map((i) => i.webkitGetAsEntry && i.webkitGetAsEntry()).filter(Boolean);
  const out = [];
  if (entries.length) for (const entry of entries) await walkEntry(entry, "", out);
  else for (const f of ev.dataTransfer.files) out.push({ file: f, rel: f.name });
  enqueue(out, host);
});

window.addEventListener("beforeunload", (ev) => {
  if (uploadsBusy()) { ev.preventDefault(); ev.returnValue = ""; }
});

load();
