// Data page: a file browser over GET/PUT/POST/DELETE /api/v2/files (the layout SFTP shows).
// The folder is in the URL (?path=); the server decides what exists and what is writable
// (common/ is read-only: its listing says writable=false and the controls go away).
// Uploads use XMLHttpRequest because fetch() reports no upload progress; each file is one
// streamed PUT that the server writes to a hidden temp file and renames only when complete,
// so a cancelled upload (xhr.abort) leaves nothing behind.
import { api, ApiError, copyText, csrfToken, el, fmtBytes, fmtDuration, fmtTime, page, t } from "./common.js";

const params = new URLSearchParams(location.search);
const state = { path: normalize(params.get("path") || "/"), sort: "name", desc: false, entries: [], writable: false };
const body = document.getElementById("files-body");
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
  errorBox.textContent = e ? (e instanceof ApiError ? `${e.message}` : String(e.message || e)) : "";
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
  state.path = normalize(path);
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

function row(e) {
  const isDir = e.type === "dir";
  const nameCell = isDir
    ? el("a", { href: `?path=${encodeURIComponent(e.path)}`, "data-path": e.path, class: "dir", onclick: go }, e.name + "/")
    : el("button", { type: "button", class: "link fname", onclick: () => preview(e) }, e.name);
  const actions = [
    el("button", { type: "button", class: "copy-path", title: homePath(e.path), onclick: () => copyPath(e) }, t("data.copy_path")),
  ];
  if (e.type === "file") actions.push(el("a", { class: "button download", href: contentUrl(e.path), download: e.name }, t("data.download")));
  if (isDir && e.path !== "/common") {
    actions.push(el("a", { class: "button download-dir", href: `/api/v2/files/archive?path=${encodeURIComponent(e.path)}`,
      download: `${e.name}.tar` }, t("data.download_tar")));
  }
  if (e.writable && e.path !== "/common") {
    actions.push(el("button", { type: "button", class: "rename", onclick: () => rename(e) }, t("data.rename")));
    actions.push(el("button", { type: "button", class: "delete", onclick: () => remove(e) }, t("data.delete")));
  }
  return el("tr", { "data-name": e.name, "data-type": e.type },
    el("td", { class: "name" }, nameCell, e.type === "symlink" ? el("span", { class: "muted" }, " → ?") : null),
    el("td", { class: "num" }, !isDir ? fmtBytes(e.size) : e.path === "/common" ? "—"
      : el("button", { type: "button", class: "link dir-size", onclick: (ev) => folderSize(e, ev.currentTarget) }, t("data.size_count"))),
    el("td", {}, fmtTime(new Date(e.mtime * 1000).toISOString())),
    el("td", { class: "actions" }, actions));
}

/** A folder's size on demand: walking a tree is not cheap enough to do for every row of every listing. */
async function folderSize(e, button) {
  button.disabled = true;
  try {
    const s = await api(`/api/v2/files/summary?path=${encodeURIComponent(e.path)}`);
    button.replaceWith(`${s.truncated ? "≥ " : ""}${fmtBytes(s.bytes)} · ${t("data.n_files", { n: s.files })}`);
  } catch (err) { button.disabled = false; showError(err); }
}

function render() {
  body.replaceChildren(...sorted(state.entries).map(row));
  document.getElementById("files-empty").hidden = state.entries.length > 0;
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
    state.writable = data.writable && state.path !== "/common";
    showError(null);
  } catch (e) {
    state.entries = [];
    state.writable = false;
    showError(e);
  }
  document.getElementById("write-tools").hidden = !state.writable;
  document.getElementById("readonly-note").hidden = state.writable || !!errorBox.textContent;
  render();
  document.body.dataset.loaded = state.path;
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
  const name = window.prompt(t("data.mkdir_prompt"));
  if (!name) return;
  try {
    await api("/api/v2/files/mkdir", { method: "POST", body: { path: join(state.path, name) } });
    await load();
  } catch (e) { showError(e); }
});

async function rename(e) {
  const to = window.prompt(t("data.rename_prompt", { name: e.name }), e.name);
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
    if (!window.confirm(question)) return;
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
    out.replaceChildren(el("p", { class: "error" }, err.message));
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

// ------------------------------------------------------------------ uploads

const uploads = { queue: [], active: null, totalBytes: 0, doneBytes: 0, canceled: false, startedAt: 0, samples: [] };

function uploadRow(item) {
  item.bar = el("progress", { max: item.file.size || 1, value: 0 });
  item.text = el("span", { class: "muted up-text" }, t("data.waiting"));
  item.cancelBtn = el("button", { type: "button", class: "up-cancel", onclick: () => cancel(item) }, t("data.cancel"));
  item.node = el("li", { "data-upload": item.dest, "data-state": "waiting" },
    el("span", { class: "mono up-name" }, item.rel), item.bar, item.text, item.cancelBtn);
  return item.node;
}

function setItem(item, st, text) {
  item.state = st;
  item.node.dataset.state = st;
  item.text.textContent = text;
  if (st !== "waiting" && st !== "uploading") item.cancelBtn.remove();
}

function overall() {
  const loaded = uploads.doneBytes + (uploads.active ? uploads.active.loaded : 0);
  const now = performance.now();
  uploads.samples.push([now, loaded]);
  while (uploads.samples.length > 2 && now - uploads.samples[0][0] > 5000) uploads.samples.shift();
  const [t0, b0] = uploads.samples[0];
  const speed = now > t0 ? ((loaded - b0) * 1000) / (now - t0) : 0;
  const left = uploads.totalBytes - loaded;
  const bar = document.getElementById("up-overall");
  bar.max = uploads.totalBytes || 1;
  bar.value = loaded;
  document.getElementById("up-overall-text").textContent = t("data.overall", {
    done: fmtBytes(loaded), total: fmtBytes(uploads.totalBytes),
    speed: speed > 0 ? `${fmtBytes(speed)}/s` : "—",
    left: speed > 0 ? fmtDuration(left / speed) : "—",
  });
  return speed;
}

async function enqueue(files) {
  // files: [{file, rel}] with rel the path below the current folder (folders keep their structure)
  if (!files.length) return;
  const existing = new Set(state.entries.map((e) => e.name));
  const clashes = files.map((f) => f.rel.split("/")[0]).filter((n, i, all) => existing.has(n) && all.indexOf(n) === i);
  if (clashes.length && !window.confirm(t("data.confirm_overwrite", { names: clashes.slice(0, 5).join(", ") }))) return;
  try {
    const u = await api("/api/v2/files/usage");
    const need = files.reduce((s, f) => s + f.file.size, 0);
    if (u.quota_bytes !== null && state.path !== "/common" && !state.path.startsWith("/common/")
        && u.used_bytes + need > u.quota_bytes) {
      showError(new Error(t("data.over_quota", { need: fmtBytes(need), used: fmtBytes(u.used_bytes), quota: fmtBytes(u.quota_bytes) })));
      return;
    }
  } catch (e) { showError(e); return; }
  document.getElementById("uploads").hidden = false;
  const list = document.getElementById("up-list");
  for (const f of files) {
    const item = { file: f.file, rel: f.rel, dest: join(state.path, f.rel), loaded: 0, state: "waiting" };
    list.append(uploadRow(item));
    uploads.queue.push(item);
    uploads.totalBytes += f.file.size;
  }
  if (!uploads.active) pump();
}

async function pump() {
  const item = uploads.queue.shift();
  if (!item) {
    uploads.active = null;
    overall();
    await load();
    document.body.dataset.uploads = "idle";
    return;
  }
  document.body.dataset.uploads = "busy";
  uploads.active = item;
  if (!uploads.startedAt) uploads.startedAt = performance.now();
  try {
    const dir = item.dest.replace(/\/[^/]*$/, "");
    if (item.rel.includes("/")) await api("/api/v2/files/mkdir", { method: "POST", body: { path: dir, parents: true } });
    await put(item);
    setItem(item, "done", t("data.done"));
  } catch (e) {
    if (item.state !== "canceled") setItem(item, "failed", e.message || String(e));
  }
  uploads.doneBytes += item.file.size;
  item.loaded = 0;
  pump();
}

async function put(item) {
  const token = await csrfToken();
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    item.xhr = xhr;
    xhr.open("PUT", `/api/v2/files/content?path=${encodeURIComponent(item.dest)}`);
    xhr.setRequestHeader("X-CSRF-Token", token);
    xhr.setRequestHeader("Content-Type", "application/octet-stream");
    xhr.upload.onprogress = (ev) => {
      item.loaded = ev.loaded;
      item.bar.value = ev.loaded;
      const speed = overall();
      const pct = item.file.size ? Math.floor((ev.loaded * 100) / item.file.size) : 100;
      const left = speed > 0 ? fmtDuration((item.file.size - ev.loaded) / speed) : "—";
      setItem(item, "uploading", `${pct}% · ${speed > 0 ? fmtBytes(speed) + "/s" : "—"} · ${t("data.left", { left })}`);
    };
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) { item.bar.value = item.file.size; resolve(); return; }
      let data = null;
      try { data = JSON.parse(xhr.responseText); } catch { data = null; }
      reject(new ApiError(xhr.status, data));
    };
    xhr.onerror = () => reject(new Error(t("data.network_error")));
    xhr.onabort = () => reject(new Error(t("data.canceled")));
    setItem(item, "uploading", "0%");
    xhr.send(item.file);
  });
}

function cancel(item) {
  if (item.state === "waiting") {
    uploads.queue = uploads.queue.filter((x) => x !== item);
    uploads.totalBytes -= item.file.size;
    setItem(item, "canceled", t("data.canceled"));
    overall();
    return;
  }
  if (item.state === "uploading" && item.xhr) {
    setItem(item, "canceled", t("data.canceled"));
    item.xhr.abort();
  }
}

document.getElementById("up-cancel-all").addEventListener("click", () => {
  for (const item of [...uploads.queue]) cancel(item);
  if (uploads.active) cancel(uploads.active);
});

function picked(input) {
  const files = [...input.files].map((f) => ({ file: f, rel: f.webkitRelativePath || f.name }));
  input.value = "";
  enqueue(files);
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
  enqueue(out);
});

window.addEventListener("beforeunload", (ev) => {
  if (uploads.active) { ev.preventDefault(); ev.returnValue = ""; }
});

load();
