// New Task: a YAML editor prefilled from a template or an earlier task's raw spec; Check (and a
// debounced check while typing) calls the dry-run admission POST /api/v2/tasks?dry_run=true and
// shows every error at its line; Submit posts the same text and opens the new task's page.
// The Environment select (GET /api/v2/envs) writes or removes the spec's top-level `env:` line and
// follows it when the text changes; the server's dry-run says whether the spec may use it.
// Work is never lost (issue 25): the text is kept as a draft per signed-in user in localStorage,
// leaving with unsaved changes asks first, and clicking an error moves the cursor to its line.
// A problem whose fix the server gives as an edit (`fix: {replace, with}`) has a button applying it
// (one undoable edit); verl keys complete as they are typed (new_task_keys.js).
import { createEditor } from "../vendor/editor.js";
import { ApiError, api, el, page, t } from "./common.js";
import { envNotes, errorMessage, fieldMessage, warningTexts } from "./messages.js";
import { installKeyCompletion } from "./new_task_keys.js";

// The verdict should arrive within 0.5 s of the last keystroke (issue 25): the dry run answers in ~0.1 s
// on a 2-core head (bench/web.py "new-task verdict"), so the pause that counts as "stopped typing" is short.
const DEBOUNCE_MS = 250;
const editor = createEditor(document.getElementById("editor"), "", () => { syncEnv(); edited(); scheduleCheck(); });
const state = document.getElementById("check-state");
let timer = null;
let inflight = null;
let generation = 0;
let loading = false;
let lastChecked = null; // the text whose verdict is shown: an edit undone to it needs no second request

// ---- Draft: the editor's text per user in this browser; `baseline` is the text last loaded or submitted ----
const DRAFT_KEY = `argus.newTask.draft.${page.user || ""}`;
const RESUME_KEY = "argus.newTask.resume"; // set for the reload of a language switch: the draft wins once
let baseline = null;
let leaving = false; // a submit or a language switch is under way: no "leave this page?" question
let offeredDraft = null; // text the "restore draft" link brings back

function readDraft() {
  try {
    const d = JSON.parse(localStorage.getItem(DRAFT_KEY) || "null");
    return d && typeof d.text === "string" && d.text.trim() ? d.text : null;
  } catch { return null; }
}

function writeDraft(text) {
  try {
    if (text.trim()) localStorage.setItem(DRAFT_KEY, JSON.stringify({ text, saved_at: new Date().toISOString() }));
    else localStorage.removeItem(DRAFT_KEY);
  } catch { /* storage full or refused: the unsaved-changes question still guards the text */ }
}

function dirty() {
  return baseline !== null && editor.get() !== baseline;
}

/** The user changed the text (not a load): keep it as the draft. */
function edited() {
  if (loading) return;
  writeDraft(editor.get());
}

const draftOffer = document.getElementById("draft-offer");

function offerDraft(text) {
  offeredDraft = text && text !== editor.get() ? text : null;
  draftOffer.hidden = offeredDraft === null;
}

document.getElementById("draft-restore").addEventListener("click", () => {
  if (offeredDraft === null) return;
  const text = offeredDraft;
  load(text);
  writeDraft(text);
  state.textContent = t("new.draft_restored");
});

window.addEventListener("beforeunload", (ev) => {
  if (leaving || !dirty()) return;
  writeDraft(editor.get());
  ev.preventDefault();
  ev.returnValue = ""; // older Chromium needs it set to ask
});

// The language switcher (common.js) reloads the page: the draft carries the text across, so no question.
// Capture phase: this runs before the switcher's own listener starts the reload.
document.addEventListener("change", (ev) => {
  if (ev.target && ev.target.id === "lang-switch") {
    leaving = true;
    if (!dirty()) return;
    writeDraft(editor.get());
    try { sessionStorage.setItem(RESUME_KEY, "1"); } catch { /* the explicit choice wins then */ }
  }
}, true);

function load(text) {
  const previous = dirty() ? editor.get() : null; // a template or a clone over edited text: offer it back
  loading = true;
  editor.set(text);
  loading = false;
  baseline = text;
  if (previous !== null) offerDraft(previous);
  else if (offeredDraft === text) offerDraft(null);
  clearResult();
  state.textContent = ""; // the previous text's verdict ("Rejected: …") is not this text's (issue 37)
  delete state.dataset.quick;
  lastChecked = null;
  scheduleCheck();
}

// ---- Errors: a click (or Enter) on one moves the editor's cursor to its line ----
function gotoLine(n) {
  const doc = editor.view.state.doc;
  if (!Number.isInteger(n) || n < 1 || n > doc.lines) return;
  const line = doc.line(n);
  editor.view.dispatch({ selection: { anchor: line.from }, scrollIntoView: true });
  editor.view.focus();
}

const errorList = document.querySelector("#errors ul");
function errorTarget(ev) {
  const li = ev.target.closest("li[data-line]");
  return li && li.dataset.line ? Number(li.dataset.line) : null;
}
errorList.addEventListener("click", (ev) => {
  if (ev.target.closest("button, a")) return; // the fix button and the link do their own thing
  const n = errorTarget(ev);
  if (n !== null && !String(window.getSelection() || "")) gotoLine(n); // selecting the message to copy it is not a jump
});
errorList.addEventListener("keydown", (ev) => {
  if (ev.target.closest("button, a")) return;
  const n = errorTarget(ev);
  if (n !== null && (ev.key === "Enter" || ev.key === " ")) { ev.preventDefault(); gotoLine(n); }
});

// ---- Environment: the `env:` line of the spec, chosen from GET /api/v2/envs ----
const envSelect = document.getElementById("env-select");
const envHint = document.getElementById("env-hint");
let envs = null; // {default, environments} once loaded
let envShown = null; // what the select was last built for

/** The spec's top-level `key: value` lines with their offsets (indented lines belong to a block). */
function topLines(text) {
  const out = [];
  let pos = 0;
  for (const line of text.split("\n")) {
    const m = /^([A-Za-z_][\w-]*)[ \t]*:(.*)$/.exec(line);
    if (m) out.push({ key: m[1], value: m[2], from: pos, to: pos + line.length });
    pos += line.length + 1;
  }
  return out;
}

function scalar(value) {
  const v = value.replace(/(^|\s)#.*$/, "").trim();
  const q = /^(["'])(.*)\1$/.exec(v);
  return q ? q[2] : v;
}

function specEnv(lines) {
  const line = lines.find((l) => l.key === "env");
  return line ? scalar(line.value) || null : null;
}

function isAdvanced(lines) {
  const kind = lines.find((l) => l.key === "kind");
  return Boolean(kind) && scalar(kind.value) === "advanced";
}

/** Write `env: <name>` into the spec (replacing its env line), or remove that line for the default. */
function setEnv(name) {
  const text = editor.get();
  const lines = topLines(text);
  const line = lines.find((l) => l.key === "env");
  const written = /^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name) ? name : JSON.stringify(name);
  let change;
  if (!name) {
    if (!line) return;
    change = { from: line.from, to: Math.min(line.to + 1, text.length), insert: "" };
  } else if (line) {
    change = { from: line.from, to: line.to, insert: `env: ${written}` };
  } else {
    const anchor = ["name", "workload", "kind"].map((k) => lines.find((l) => l.key === k)).find(Boolean);
    change = anchor ? { from: anchor.to, insert: `\nenv: ${written}` } : { from: 0, insert: `env: ${written}\n` };
  }
  editor.view.dispatch({ changes: change }); // one undoable edit; the editor's listener checks again
}

function envLabel(e) {
  const parts = [e.name, e.verl ? `verl ${e.verl}` : null, e.rollout_engines.length ? e.rollout_engines.join("/") : null];
  return parts.filter(Boolean).join(" · ") + (e.ok ? "" : ` (${t("new.env_failed")})`);
}

/** Rebuild the select for the spec in the editor: basic specs are offered the template environments only. */
function syncEnv() {
  const lines = topLines(editor.get());
  const advanced = isAdvanced(lines);
  const current = specEnv(lines);
  const key = `${envs ? "1" : "0"}|${advanced}|${current}`;
  if (key === envShown) return;
  envShown = key;
  const dflt = envs ? envs.default : null;
  const offered = envs ? envs.environments.filter((e) => advanced || e.templates) : [];
  const options = [el("option", { value: "" }, envs ? t("new.env_default", { name: dflt }) : t("new.env_default_unknown")),
    ...offered.map((e) => el("option", { value: e.name, disabled: !e.ok }, envLabel(e)))];
  if (current && !offered.some((e) => e.name === current)) { // typed or cloned: shown as written, judged by the server
    options.push(el("option", { value: current }, envs ? t("new.env_not_offered", { name: current }) : current));
  }
  envSelect.replaceChildren(...options);
  envSelect.value = current || "";
  const chosen = envs && envs.environments.find((e) => e.name === (current || dflt));
  if (envs) envHint.textContent = chosen ? envNotes(chosen).join(" ") : "";
}

envSelect.addEventListener("change", () => setEnv(envSelect.value));

async function loadEnvs() {
  try {
    envs = await api("/api/v2/envs");
  } catch (e) {
    envHint.textContent = t("new.env_unavailable", { error: errorMessage(e) });
  }
  envShown = null;
  syncEnv();
}

for (const b of document.querySelectorAll("[data-template]")) {
  b.addEventListener("click", () => load(page.templates[b.dataset.template]));
}

async function loadFromTask(id, draft = null) {
  try {
    const spec = await api(`/api/v2/tasks/${encodeURIComponent(id)}/spec`);
    load(spec.raw);
    if (draft) offerDraft(draft);
    state.textContent = t("new.cloned", { id });
  } catch (e) {
    state.textContent = e instanceof ApiError && e.status === 404 ? t("new.clone_missing", { id }) : errorMessage(e);
  }
}

document.getElementById("clone-load").addEventListener("click", () => {
  const id = document.getElementById("clone-id").value.trim();
  if (id) loadFromTask(id);
});

function scheduleCheck() {
  if (loading) return;
  clearTimeout(timer);
  timer = setTimeout(() => check(false), DEBOUNCE_MS);
}

function clearResult() {
  for (const id of ["errors", "warnings", "info", "expanded", "ok"]) document.getElementById(id).hidden = true;
  editor.setProblems([]);
}

// ---- One-click fixes: the server's `fix` is an edit, applied where the problem's line has its text ----
const NOT_KEY = /[\w.]/; // a fix's text is a key or `key=value`: never a piece of a longer name

function findFix(text, needle, from = 0) {
  for (let i = text.indexOf(needle, from); i >= 0; i = text.indexOf(needle, i + 1)) {
    const before = text[i - 1] || " ";
    const after = text[i + needle.length] || " ";
    if ((!NOT_KEY.test(needle[0]) || !NOT_KEY.test(before)) && !NOT_KEY.test(after)) return i;
  }
  return -1;
}

function applyFix(e) {
  const doc = editor.view.state.doc;
  const { replace, with: by } = e.fix;
  let at = -1;
  if (Number.isInteger(e.line) && e.line >= 1 && e.line <= doc.lines) {
    const line = doc.line(e.line);
    const i = findFix(line.text, replace);
    if (i >= 0) at = line.from + i;
  }
  if (at < 0) at = findFix(doc.toString(), replace);
  if (at < 0) { state.textContent = t("new.fix_not_found", { text: replace }); return; }
  let change = { from: at, to: at + replace.length, insert: by };
  const line = doc.lineAt(at);
  const rest = line.text.slice(0, at - line.from) + line.text.slice(at - line.from + replace.length);
  if (!by && /^[\s\\'"-]*$/.test(rest)) { // deleting the line's only override: the line goes too
    change = { from: line.from, to: Math.min(line.to + 1, doc.length), insert: "" };
    const prev = line.number > 1 ? doc.line(line.number - 1) : null;
    const cont = prev && /\s*\\$/.exec(prev.text);
    if (cont && !/\\\s*$/.test(line.text)) { // it ended a `\`-continued command: so does the line before now
      change = { from: prev.from + cont.index, to: change.to, insert: line.to < doc.length ? "\n" : "" };
    }
  }
  editor.view.dispatch({ changes: change, selection: { anchor: change.from + change.insert.length },
                         scrollIntoView: true, userEvent: "input.fix" }); // one edit: Ctrl+Z undoes it
  editor.view.focus();
  state.textContent = by ? t("new.fix_applied", { from: replace, to: by }) : t("new.fix_deleted", { text: replace });
}

function fixButton(e) {
  if (!e.fix || typeof e.fix.replace !== "string" || !e.fix.replace) return null;
  const by = e.fix.with || "";
  const b = el("button", { type: "button", class: "newtask-fix",
                           title: by ? t("new.fix_title", { from: e.fix.replace, to: by }) : t("new.fix_delete_title", { text: e.fix.replace }) },
               by ? t("new.fix_apply", { to: by }) : t("new.fix_delete", { text: e.fix.replace }));
  b.addEventListener("click", () => applyFix(e));
  return b;
}

function problemLink(e) {
  if (typeof e.link !== "string" || !e.link.startsWith("/")) return null; // a page of this server only
  return el("a", { href: e.link, class: "newtask-link" }, e.link === "/data" ? t("new.link_data") : e.link);
}

function problemItem(e) {
  const where = e.line ? t("new.at_line", { line: e.line }) : "";
  const classes = [e.line ? "goto" : null, e.link ? "newtask-todo" : null].filter(Boolean).join(" ");
  return el("li", { "data-line": e.line || "", "data-field": e.field, class: classes || null,
                    tabindex: e.line ? "0" : null, title: e.line ? t("new.goto_line", { line: e.line }) : null },
    el("code", {}, e.field), " ",
    e.value !== null && e.value !== undefined && e.value !== "" ? el("span", { class: "value" }, `= ${JSON.stringify(e.value)}`) : null,
    where ? el("span", { class: "line" }, ` (${where})`) : null,
    ": ", el("span", { class: "message" }, fieldMessage(e)), " ", fixButton(e), problemLink(e));
}

function show(errors, warnings, info, expanded, final = true) {
  clearResult();
  const errBox = document.getElementById("errors");
  errBox.querySelector("ul").replaceChildren(...errors.map(problemItem));
  errBox.hidden = errors.length === 0;
  const warnBox = document.getElementById("warnings");
  warnBox.querySelector("ul").replaceChildren(...warnings.map((w) => el("li", {}, w)));
  warnBox.hidden = warnings.length === 0;
  const infoBox = document.getElementById("info");
  const hasInfo = info && Object.keys(info).length > 0;
  infoBox.querySelector("pre").textContent = hasInfo ? JSON.stringify(info, null, 2) : "";
  infoBox.hidden = !hasInfo;
  const exp = document.getElementById("expanded");
  exp.querySelector("pre").textContent = expanded || "";
  exp.hidden = !expanded;
  document.getElementById("ok").hidden = !final || errors.length > 0;
  editor.setProblems(errors.map((e) => ({ line: e.line, severity: "error", message: `${e.field}: ${fieldMessage(e)}` })));
}

/** The spec's own checks (`checks=spec`: no verl, milliseconds), shown while verl's full check runs: its
 * problems at once, then the full verdict replaces them (issue 37). Never the final word: no "ok" and no
 * `data-verdict`; `data-quick` numbers it for the tests. A quick answer after the full one is dropped. */
async function quickCheck(text, mine, ctrl, settled) {
  try {
    const r = await api("/api/v2/tasks?dry_run=true&checks=spec", { method: "POST", body: text, contentType: "application/yaml", signal: ctrl.signal });
    if (mine !== generation || settled.done) return;
    show([], warningTexts(r), null, r.command_expanded, false);
    state.textContent = t("new.checking_verl");
  } catch (e) {
    if (mine !== generation || settled.done || e.name === "AbortError") return;
    if (!(e instanceof ApiError && e.status === 400)) return; // the full check reports what went wrong
    show(e.errors.length ? e.errors : [{ field: "(spec)", value: null, message: errorMessage(e) }], warningTexts(e), null, null, false);
    state.textContent = t("new.rejected_so_far", { n: e.errors.length || 1 });
  }
  state.dataset.quick = String(mine);
}

async function check(explicit) {
  const text = editor.get();
  if (!text.trim()) { clearResult(); state.textContent = ""; lastChecked = null; return; }
  if (!explicit && text === lastChecked && !inflight) return; // its verdict is the one on screen
  if (inflight) inflight.abort();
  const ctrl = new AbortController();
  inflight = ctrl;
  const mine = ++generation;
  state.textContent = t("new.checking");
  const settled = { done: false };
  quickCheck(text, mine, ctrl, settled);
  try {
    const r = await api("/api/v2/tasks?dry_run=true", { method: "POST", body: text, contentType: "application/yaml", signal: ctrl.signal });
    settled.done = true;
    if (mine !== generation) return;
    show([], warningTexts(r), r.info, r.command_expanded);
    state.textContent = t("new.checked");
    verdict(text, mine);
  } catch (e) {
    settled.done = true;
    if (mine !== generation || e.name === "AbortError") return;
    if (e instanceof ApiError && e.status === 400) {
      show(e.errors.length ? e.errors : [{ field: "(spec)", value: null, message: errorMessage(e) }], warningTexts(e), null, null);
      state.textContent = t("new.rejected", { n: e.errors.length || 1 });
      verdict(text, mine);
    } else {
      state.textContent = errorMessage(e);
    }
  } finally {
    if (inflight === ctrl) inflight = null;
  }
  if (explicit) document.getElementById("result").scrollIntoView({ block: "nearest" });
}

/** A verdict for `text` is on screen: remembered, and numbered for tests and bench/web.py to wait on. */
function verdict(text, mine) {
  lastChecked = text;
  state.dataset.verdict = String(mine);
  keyCompletion.warm(); // after the verdict, not beside it: the key list is composed by the same validator
}

document.getElementById("check").addEventListener("click", () => { clearTimeout(timer); check(true); });

// One Idempotency-Key per spec text: a retried Submit (double click, lost answer) never queues twice;
// an edited spec is a new submission. getRandomValues works on plain http too (randomUUID does not).
let submitKey = null;
let submitText = null;
function idempotencyKey(text) {
  if (text !== submitText) {
    submitText = text;
    submitKey = Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
  }
  return submitKey;
}

document.getElementById("submit").addEventListener("click", async () => {
  clearTimeout(timer);
  if (inflight) inflight.abort();
  generation++;
  const btn = document.getElementById("submit");
  btn.disabled = true;
  state.textContent = t("new.submitting");
  try {
    const text = editor.get();
    const r = await api("/api/v2/tasks", { method: "POST", body: text, contentType: "application/yaml",
                                           headers: { "Idempotency-Key": idempotencyKey(text) } });
    baseline = text;
    leaving = true;
    try { localStorage.removeItem(DRAFT_KEY); } catch { /* nothing kept, nothing to clear */ }
    location.assign(`/tasks/${encodeURIComponent(r.task_id)}`);
  } catch (e) {
    if (e instanceof ApiError && e.status === 400) {
      show(e.errors.length ? e.errors : [{ field: "(spec)", value: null, message: errorMessage(e) }], warningTexts(e), null, null);
      state.textContent = t("new.rejected", { n: e.errors.length || 1 });
    } else {
      state.textContent = errorMessage(e);
    }
    btn.disabled = false;
  }
});

/** The spec's workload and environment, for the key completion (basic specs name it; advanced default ppo). */
function completionSpec() {
  const lines = topLines(editor.get());
  const w = lines.find((l) => l.key === "workload");
  const workload = w ? scalar(w.value) : "";
  return { workload: ["ppo", "grpo", "sft"].includes(workload) ? workload : "ppo", env: specEnv(lines) };
}
const keyCompletion = installKeyCompletion(editor, completionSpec, t);

loadEnvs();
{
  const draft = readDraft();
  const chosen = new URLSearchParams(location.search).get("template");
  const template = chosen && Object.prototype.hasOwnProperty.call(page.templates, chosen) ? chosen : null;
  let resume = false;
  try { resume = sessionStorage.getItem(RESUME_KEY) === "1"; sessionStorage.removeItem(RESUME_KEY); } catch { /* none */ }
  if (page.clone) document.getElementById("clone-id").value = page.clone;
  if (draft && (resume || (!page.clone && !template))) {
    load(draft);
  } else if (page.clone) { // an explicit choice wins; the draft stays stored and is offered back
    loadFromTask(page.clone, draft);
  } else {
    load(page.templates[template || page.start]);
    if (draft) offerDraft(draft);
  }
}
