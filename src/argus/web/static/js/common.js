// Shared by every page: translations, the API client (session cookie + CSRF header), safe DOM
// building (text only, never innerHTML), local-time formatting, the language switcher, sign out.
const catalog = JSON.parse(document.getElementById("argus-i18n").textContent);
export const page = JSON.parse(document.getElementById("argus-page").textContent);

/** The catalog's text for key; {name} placeholders filled from vars. */
export function t(key, vars) {
  let s = Object.prototype.hasOwnProperty.call(catalog, key) ? catalog[key] : key;
  if (vars) for (const [k, v] of Object.entries(vars)) s = s.split(`{${k}}`).join(String(v));
  return s;
}

const STATUS_KEYS = {
  QUEUED: "status.QUEUED", SUBMITTED: "status.SUBMITTED", RUNNING: "status.RUNNING",
  CANCELING: "status.CANCELING", SUCCEEDED: "status.SUCCEEDED", FAILED: "status.FAILED",
  CANCELED: "status.CANCELED",
};
export const TERMINAL = new Set(["SUCCEEDED", "FAILED", "CANCELED"]);

export function statusBadge(status) {
  return el("span", { class: `badge st-${String(status).toLowerCase()}`, "data-status": status },
    STATUS_KEYS[status] ? t(STATUS_KEYS[status]) : status);
}

/** An element with attributes and children; strings become text nodes (hostile text stays text). */
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

export function setText(id, text) {
  const node = document.getElementById(id);
  if (node) node.textContent = text === null || text === undefined || text === "" ? "—" : String(text);
}

let csrf = null;

/** The CSRF token of this browser session (asked once per page load). */
export async function csrfToken() {
  if (csrf === null) {
    const r = await fetch("/api/v2/session", { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (r.status === 401) toLogin();
    csrf = r.ok ? (await r.json()).csrf_token : "";
  }
  return csrf;
}

export function toLogin() {
  const next = location.pathname + location.search;
  location.assign(`/login?next=${encodeURIComponent(next)}`);
  return new Promise(() => {}); // the page is going away
}

export class ApiError extends Error {
  constructor(status, body) {
    const d = (body && body.detail) || {};
    super(d.message || `HTTP ${status}`);
    this.status = status;
    this.code = d.code;
    this.messageCode = d.message_code; // the message as code + params (issue 37): messages.js says it
    this.messageParams = d.message_params;
    this.errors = d.errors || [];
    this.warnings = d.warnings || [];
    this.warningMessages = d.warning_messages || []; // the warnings as codes (issue 37): messages.js warningTexts
  }
}

/** fetch /api/v2… with the session cookie; mutating calls carry X-CSRF-Token. JSON in, JSON out. */
export async function api(path, { method = "GET", body, contentType, signal, raw = false, headers: extra } = {}) {
  const headers = { Accept: "application/json", ...(extra || {}) };
  if (method !== "GET" && method !== "HEAD") headers["X-CSRF-Token"] = await csrfToken();
  let payload = body;
  if (body !== undefined && typeof body !== "string") {
    payload = JSON.stringify(body);
    headers["Content-Type"] = "application/json";
  } else if (contentType) headers["Content-Type"] = contentType;
  const r = await fetch(path, { method, headers, body: payload, credentials: "same-origin", signal });
  if (r.status === 401) return toLogin();
  if (raw) return r;
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = { detail: { message: text.slice(0, 300) } }; }
  if (!r.ok) throw new ApiError(r.status, data);
  return data;
}

const dateFmt = new Intl.DateTimeFormat(page.lang === "zh" ? "zh-CN" : "en", {
  year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit",
});

/** An API timestamp shown in the browser's own time zone. */
export function fmtTime(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : dateFmt.format(d);
}

export function fmtDuration(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "—";
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  if (h) return t("time.hm", { h, m });
  if (m) return t("time.ms", { m, s: r });
  return t("time.s", { s: r });
}

export function age(iso) {
  return iso ? (Date.now() - new Date(iso).getTime()) / 1000 : null;
}

export function duration(task) {
  if (!task.started_at) return null;
  const end = task.finished_at ? new Date(task.finished_at).getTime() : Date.now();
  return (end - new Date(task.started_at).getTime()) / 1000;
}

export function gpus(task) {
  return `${task.nnodes} × ${task.n_gpus_per_node}`;
}

/** Run fn every `ms` while the tab is visible, never two at once (no request storm). */
export function poll(fn, ms) {
  let busy = false, again = false, timer = null, stopped = false;
  const tick = async () => {
    if (stopped || document.visibilityState !== "visible") return;
    if (busy) { again = true; return; } // one more run after this one (a filter changed meanwhile)
    busy = true;
    try { await fn(); } catch (e) { console.warn(e); } finally { busy = false; }
    if (again) { again = false; tick(); }
  };
  timer = setInterval(tick, ms);
  document.addEventListener("visibilitychange", () => { if (document.visibilityState === "visible") tick(); });
  return { stop() { stopped = true; clearInterval(timer); }, now: tick };
}

/** Bytes in binary units (1.5 GiB); "—" when unknown. */
export function fmtBytes(n) {
  if (n === null || n === undefined || !Number.isFinite(n)) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n, i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return i ? `${v.toFixed(v < 10 ? 2 : 1)} ${units[i]}` : `${n} B`;
}

/** Put text on the clipboard: the Clipboard API where the page may use it, else a hidden textarea. */
export async function copyText(text) {
  try {
    if (navigator.clipboard && window.isSecureContext) { await navigator.clipboard.writeText(text); return true; }
  } catch { /* fall back below */ }
  const area = el("textarea", { class: "offscreen", readonly: true });
  area.value = text;
  document.body.append(area);
  area.select();
  const ok = document.execCommand("copy");
  area.remove();
  return ok;
}

function setLanguage(lang) {
  localStorage.setItem("argus_lang", lang);
  document.cookie = `argus_lang=${lang}; path=/; max-age=31536000; SameSite=Strict`;
  location.reload();
}

function wireChrome() {
  const sw = document.getElementById("lang-switch");
  if (sw) sw.addEventListener("change", () => setLanguage(sw.value));
  // A language chosen earlier in this browser wins over Accept-Language even if the cookie was cleared.
  const remembered = localStorage.getItem("argus_lang");
  if (remembered && remembered !== page.lang && !document.cookie.includes("argus_lang=")) setLanguage(remembered);
  const out = document.getElementById("sign-out");
  if (out) out.addEventListener("click", async () => {
    try { await api("/api/v2/session", { method: "DELETE", raw: true }); } finally { location.assign("/login"); }
  });
  const first = location.pathname.split("/")[1];
  const nav = location.pathname === "/tasks/new" ? "new" : first === "tasks" ? "tasks" : first;
  for (const a of document.querySelectorAll("[data-nav]")) if (a.dataset.nav === nav) a.classList.add("current");
}

wireChrome();

/** Show an action's outcome in ``target`` (a result line): the text, then an optional link (a new task). */
export function sayResult(target, ok, text, link) {
  target.hidden = false;
  target.className = ok ? "" : "error";
  target.dataset.ok = ok ? "1" : "0";
  target.replaceChildren(text, link ? " " : "", link || "");
}

// ------------------------------------------------------------------ in-page dialogs
// Instead of the browser's confirm, prompt and alert dialogs, which block the whole tab, cannot be translated or styled, and
// which Chromium may suppress: a modal <dialog> (showModal keeps focus inside, the page behind inert),
// Esc cancels, Enter confirms, its buttons in the page's language. One at a time; each returns a promise.

let dialogCount = 0;

/**
 * Ask in a modal dialog. ``input`` (a string: the field's first value) makes it a prompt; ``fields`` (a list of
 * {name, label, value, hint, inputmode}) makes it a small form, each field a labelled text box.
 * Resolves to the typed text (prompt), {name: text} (form) or true (confirm) on OK; null (prompt, form) or
 * false (confirm) on cancel. What was typed is returned as typed: checking it is the API's job.
 */
export function ask(message, { input, fields, ok, cancel = true, danger = false } = {}) {
  const isForm = Array.isArray(fields);
  const specs = isForm ? fields : input !== undefined && input !== null ? [{ name: "", value: input }] : [];
  const prompt = specs.length > 0;
  const inputs = specs.map((f) => {
    const box = el("input", { type: "text", class: "dialog-input", name: f.name || null, "data-field": f.name || null,
      inputmode: f.inputmode || null, placeholder: f.hint || null, autocomplete: "off",
      "aria-label": isForm ? null : message });
    box.value = String(f.value ?? "");
    return box;
  });
  const boxes = isForm ? specs.map((f, i) => el("label", { class: "dialog-field" }, el("span", {}, f.label), inputs[i]))
    : inputs;
  const okBtn = el("button", { type: "submit", class: danger ? "danger dialog-ok" : "primary dialog-ok" },
    ok || t("dialog.ok"));
  const cancelBtn = cancel ? el("button", { type: "button", class: "dialog-cancel" }, t("dialog.cancel")) : null;
  const text = el("p", { class: "dialog-message", id: `dialog-msg-${++dialogCount}` }, message);
  const form = el("form", { method: "dialog" }, text, boxes, el("div", { class: "dialog-buttons" }, cancelBtn, okBtn));
  const kind = isForm ? "form" : prompt ? "prompt" : cancel ? "confirm" : "alert";
  const dlg = el("dialog", { class: "argus-dialog", "aria-labelledby": text.id, "data-kind": kind }, form);
  const opener = document.activeElement;
  const answerOf = (yes) => {
    if (isForm) return yes ? Object.fromEntries(specs.map((f, i) => [f.name, inputs[i].value])) : null;
    return prompt ? (yes ? inputs[0].value : null) : yes;
  };
  return new Promise((resolve) => {
    let answered = false;
    const finish = (yes) => {
      if (answered) return;
      answered = true;
      dlg.close();
      dlg.remove();
      if (opener && typeof opener.focus === "function" && opener.isConnected) opener.focus();
      resolve(answerOf(yes));
    };
    form.addEventListener("submit", (ev) => { ev.preventDefault(); finish(true); });
    if (cancelBtn) cancelBtn.addEventListener("click", () => finish(false));
    dlg.addEventListener("cancel", (ev) => { ev.preventDefault(); finish(!cancel); }); // Esc
    const stops = [...inputs, cancelBtn, okBtn].filter(Boolean);
    dlg.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && ev.target !== cancelBtn && !ev.isComposing) { ev.preventDefault(); finish(true); }
      if (ev.key === "Tab") {  // focus stays in the dialog: Tab from the last control wraps to the first
        const at = stops.indexOf(document.activeElement);
        const next = ev.shiftKey ? (at <= 0 ? stops.length - 1 : at - 1) : (at + 1) % stops.length;
        ev.preventDefault();
        stops[next].focus();
      }
    });
    document.body.append(dlg);
    dlg.showModal();
    (inputs[0] || okBtn).focus();
    if (inputs[0]) inputs[0].select();
  });
}

/** A yes/no question in the page (true: confirmed). */
export const confirmDialog = (message, opts) => ask(message, opts);
/** A line of text asked in the page (null: cancelled). */
export const promptDialog = (message, value = "", opts) => ask(message, { ...opts, input: value });
/** A few lines of text asked in one form ({name: text}; null: cancelled). */
export const formDialog = (message, fields, opts) => ask(message, { ...opts, fields });
/** A message the user acknowledges (OK only). */
export const alertDialog = (message) => ask(message, { cancel: false });
