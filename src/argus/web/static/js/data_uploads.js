// Data page uploads: a small pool of concurrent PUTs, one progress row per file, one overall bar.
// Why a pool: a folder of many small files spent its time waiting on round trips one after the
// other (each file a mkdir and a PUT), not on the server or the wire; POOL requests in flight hide
// that latency while staying under the browser's six connections per host, so the listing and
// other API calls still get through. Each folder is made once (mkdir -p), shared by its files.
// Finished rows are removed at once (a counter says how many); failed and canceled rows stay with
// the server's message and a Retry button. Uploads use XMLHttpRequest because fetch() reports no
// upload progress; the server writes a hidden temp file and renames it only when complete, so a
// canceled upload (xhr.abort) leaves nothing behind.
import { api, ApiError, confirmDialog, csrfToken, el, fmtBytes, fmtDuration, t } from "./common.js";
import { errorMessage } from "./messages.js";

/** The figures of GET /api/v2/files/usage that apply in ``folder``: a team folder's own (``usage.teams``,
 * each with its ``path``) inside it, else the home's. */
export function quotaFor(usage, folder) {
  const team = (usage.teams || []).find((x) => folder === x.path || folder.startsWith(`${x.path}/`));
  return team || usage;
}

export const POOL = 4;

const up = {
  queue: [], active: new Set(), items: new Set(), dirs: new Map(),
  totalBytes: 0, doneBytes: 0, files: 0, finished: 0, samples: [], frame: 0, host: null,
};

/** Bytes per second as people read it: "850 B/s", "1.20 MiB/s"; "—" before there is a figure. */
export function fmtSpeed(bps) {
  return bps > 0 && Number.isFinite(bps) ? `${fmtBytes(Math.round(bps))}/s` : "—";
}

function row(item) {
  item.bar = el("progress", { max: item.file.size || 1, value: 0 });
  item.text = el("span", { class: "muted up-text" }, t("data.waiting"));
  item.cancelBtn = el("button", { type: "button", class: "up-cancel", onclick: () => cancel(item) }, t("data.cancel"));
  item.retryBtn = el("button", { type: "button", class: "up-retry", hidden: true, onclick: () => retry(item) }, t("data.up_retry"));
  item.node = el("li", { "data-upload": item.dest, "data-state": "waiting" },
    el("span", { class: "mono up-name" }, item.rel), item.bar, item.text, item.cancelBtn, item.retryBtn);
  return item.node;
}

function setItem(item, st, text) {
  item.state = st;
  item.node.dataset.state = st;
  item.text.textContent = text;
  item.cancelBtn.hidden = !(st === "waiting" || st === "uploading");
  item.retryBtn.hidden = !(st === "failed" || st === "canceled");
}

/** Overall figures from a 5 s window of samples: the speed of the last seconds, not since the start. */
function overall() {
  let loaded = up.doneBytes;
  for (const item of up.active) loaded += item.loaded;
  const now = performance.now();
  up.samples.push([now, loaded]);
  while (up.samples.length > 2 && now - up.samples[0][0] > 5000) up.samples.shift();
  const [t0, b0] = up.samples[0];
  const speed = now - t0 > 200 ? ((loaded - b0) * 1000) / (now - t0) : 0;
  const bar = document.getElementById("up-overall");
  bar.max = up.totalBytes || 1;
  bar.value = loaded;
  document.getElementById("up-overall-text").textContent = t("data.up_overall", {
    files: up.finished, of: up.files, done: fmtBytes(loaded), total: fmtBytes(up.totalBytes),
    speed: fmtSpeed(speed), left: speed > 0 ? fmtDuration((up.totalBytes - loaded) / speed) : "—",
  });
  document.getElementById("up-count").textContent = up.finished ? t("data.up_cleared", { n: up.finished }) : "";
  const stopped = busy() ? 0 : [...up.items].filter((i) => i.state === "failed" || i.state === "canceled").length;
  if (stopped) document.getElementById("up-overall-text").textContent = t("data.up_stopped", { n: stopped });
}

/** Progress repaints at most once a frame: a hundred small files fire hundreds of events. */
function repaint() {
  if (up.frame) return;
  up.frame = requestAnimationFrame(() => {
    up.frame = 0;
    overall();
    const now = performance.now();
    for (const item of up.active) {
      if (item.state !== "uploading") continue;
      item.bar.value = item.loaded;
      const secs = (now - item.started) / 1000;
      const speed = secs > 0.2 ? item.loaded / secs : 0;
      const pct = item.file.size ? Math.floor((item.loaded * 100) / item.file.size) : 100;
      item.text.textContent = t("data.up_row", {
        pct, speed: fmtSpeed(speed), left: speed > 0 ? fmtDuration((item.file.size - item.loaded) / speed) : "—",
      });
    }
  });
}

/** Queue ``files`` ([{file, rel}], rel below ``folder``); ``host`` gives the page's listing and reload. */
export async function enqueue(files, host) {
  up.host = host;
  if (!files.length) return;
  const was = document.body.dataset.uploads;
  document.body.dataset.uploads = "busy"; // from the pick on, so a waiter never sees the last batch's "idle"
  const refused = () => { if (!busy()) document.body.dataset.uploads = was || "idle"; };
  const existing = new Set(host.names());
  const clashes = files.map((f) => f.rel.split("/")[0]).filter((n, i, all) => existing.has(n) && all.indexOf(n) === i);
  if (clashes.length && !(await confirmDialog(t("data.confirm_overwrite", { names: clashes.slice(0, 5).join(", ") })))) {
    refused();
    return;
  }
  try {
    const u = quotaFor(await api("/api/v2/files/usage"), host.folder());
    const need = files.reduce((s, f) => s + f.file.size, 0);
    if (u.quota_bytes !== null && !host.folder().startsWith("/common") && u.used_bytes + need > u.quota_bytes) {
      host.error(new Error(t("data.over_quota", { need: fmtBytes(need), used: fmtBytes(u.used_bytes), quota: fmtBytes(u.quota_bytes) })));
      refused();
      return;
    }
  } catch (e) { host.error(e); refused(); return; }
  document.getElementById("uploads").hidden = false;
  const list = document.getElementById("up-list");
  const folder = host.folder();
  const rows = [];
  freshBatch();
  for (const f of files) {
    const item = { file: f.file, rel: f.rel, dest: join(folder, f.rel), loaded: 0, state: "waiting" };
    rows.push(row(item));
    up.queue.push(item);
    up.items.add(item);
    up.totalBytes += f.file.size;
    up.files += 1;
  }
  list.append(...rows);
  document.body.dataset.uploads = "busy";
  pump();
}

/** A batch that starts when nothing is running starts its figures afresh (the last ones stay shown till then). */
function freshBatch() {
  if (busy()) return;
  up.totalBytes = up.doneBytes = up.files = up.finished = 0;
  up.samples = [];
}

function join(dir, name) {
  return dir === "/" ? `/${name}` : `${dir}/${name}`;
}

function pump() {
  while (up.active.size < POOL && up.queue.length) {
    const item = up.queue.shift();
    up.active.add(item);
    run(item).finally(() => {
      up.active.delete(item);
      pump();
    });
  }
  if (!up.active.size && !up.queue.length) drained();
}

async function drained() {
  overall();
  up.dirs.clear();
  if (up.host) await up.host.reload();
  if (up.active.size || up.queue.length) return; // a new batch started meanwhile
  if (![...up.items].some((i) => i.state === "failed" || i.state === "canceled")) {
    document.getElementById("uploads").hidden = true;
  }
  document.body.dataset.uploads = "idle";
}

/** One ``mkdir -p`` per folder of a folder upload, shared by every file in it. */
function ensureDir(dir) {
  if (!up.dirs.has(dir)) {
    const made = api("/api/v2/files/mkdir", { method: "POST", body: { path: dir, parents: true } });
    made.catch(() => up.dirs.delete(dir)); // a retry asks again
    up.dirs.set(dir, made);
  }
  return up.dirs.get(dir);
}

async function run(item) {
  try {
    if (item.rel.includes("/")) await ensureDir(item.dest.replace(/\/[^/]*$/, ""));
    if (item.state === "canceled") return;
    await put(item);
    up.doneBytes += item.file.size;
    up.finished += 1;
    item.state = "done";
    item.node.remove(); // cleared: the listing shows the file, the counter says how many arrived
    up.items.delete(item);
    document.body.dataset.uploadsDone = String((Number(document.body.dataset.uploadsDone) || 0) + 1);
  } catch (e) {
    if (item.state !== "canceled") setItem(item, "failed", errorMessage(e));
  } finally {
    item.loaded = 0;
    repaint();
  }
}

async function put(item) {
  const token = await csrfToken();
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    item.xhr = xhr;
    item.started = performance.now();
    xhr.open("PUT", `/api/v2/files/content?path=${encodeURIComponent(item.dest)}`);
    xhr.setRequestHeader("X-CSRF-Token", token);
    xhr.setRequestHeader("Content-Type", "application/octet-stream");
    xhr.upload.onprogress = (ev) => {
      item.loaded = ev.loaded;
      repaint();
    };
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) { resolve(); return; }
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
    up.queue = up.queue.filter((x) => x !== item);
    up.totalBytes -= item.file.size;
    up.files -= 1;
    setItem(item, "canceled", t("data.canceled"));
    repaint();
    if (!up.active.size && !up.queue.length) drained();
    return;
  }
  if (item.state === "uploading" && item.xhr) {
    setItem(item, "canceled", t("data.canceled"));
    item.xhr.abort();
  }
}

function retry(item) {
  if (item.state !== "failed" && item.state !== "canceled") return;
  freshBatch();
  item.loaded = 0;
  item.bar.value = 0;
  setItem(item, "waiting", t("data.waiting"));
  up.queue.push(item);
  up.totalBytes += item.file.size;
  up.files += 1;
  document.getElementById("uploads").hidden = false;
  document.body.dataset.uploads = "busy";
  pump();
}

export function cancelAll() {
  for (const item of [...up.queue]) cancel(item);
  for (const item of [...up.active]) cancel(item);
}

/** Forget the failed and canceled rows (the files stay wherever they were: nowhere). */
export function clearStopped() {
  for (const item of [...up.items]) {
    if (item.state === "failed" || item.state === "canceled") { item.node.remove(); up.items.delete(item); }
  }
  if (!up.active.size && !up.queue.length) document.getElementById("uploads").hidden = true;
}

export function busy() {
  return up.active.size > 0 || up.queue.length > 0;
}
