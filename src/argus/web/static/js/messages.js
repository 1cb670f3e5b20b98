// Server messages in the page's language (issue 37): the server sends a stable code and its parameters beside
// its English text (pending_reason_code/params, failure_hint_code/params, a refusal's message_code/params and
// each field error's code/params); the page says them with its catalog's
// msg.<code> templates, by the same small rules as core/messages.py: {name} a value (a dict: a nested message, a
// list: its items joined by sep.<name> or sep, empty: none), {s:name} an English plural, params.then appended
// after a space. A code the catalog does not know (a newer server) shows the server's text.
import { t } from "./common.js";

const PLACEHOLDER = /\{(s:)?(\w+)\}/g;

function template(code) {
  const key = `msg.${code}`;
  const s = t(key);
  if (s === key) throw new Error(`unknown message code ${code}`);
  return s;
}

function render(code, params) {
  let text = template(code).replace(PLACEHOLDER, (whole, plural, name) => {
    if (!Object.prototype.hasOwnProperty.call(params, name)) return whole;
    const v = params[name];
    if (plural) return v === 1 ? "" : "s";
    if (Array.isArray(v)) {
      if (!v.length) return template("none");
      let sep;
      try { sep = template(`sep.${name}`); } catch { sep = template("sep"); }
      return v.map((item) => render(item.code, item)).join(sep);
    }
    if (v !== null && typeof v === "object") return render(v.code, v);
    return String(v);
  });
  for (const tail of params.then || []) text += ` ${render(tail.code, tail)}`;
  return text;
}

/** The message in the page's language; ``text`` (the server's English) when there is no code or it is unknown. */
export function sayMessage(code, params, text) {
  if (!code) return text || "";
  try {
    return render(code, params || {});
  } catch {
    return text || "";
  }
}

/** A field error of a refused request (`{field, value, message, code?, params?}`: admission's spec.* and path.*
 * refusals carry a code) in the page's language; its English `message` where it has no code. */
export function fieldMessage(e) {
  return sayMessage(e.code, e.params, e.message);
}

/** A refused request's message (an ApiError: the API's `message_code`/`message_params` beside its English
 * `message`) in the page's language; its English where it has no code, and any other error's own text. */
export function errorMessage(e) {
  return sayMessage(e.messageCode, e.messageParams, e.message || String(e));
}

/** A refused request as a line: its message, then each field's problem (field: message), in the page's
 * language; `sep` joins them. */
export function problemText(e, sep = " — ") {
  return [errorMessage(e), ...(e.errors || []).map((x) => `${x.field}: ${fieldMessage(x)}`)].join(sep);
}

/** A task's pending reason in the page's language. */
export function pendingReason(task) {
  return sayMessage(task.pending_reason_code, task.pending_reason_params, task.pending_reason);
}

/** A task's status message in the page's language ("canceled by alice", "exit code 1: <the program's own text>"):
 * `text` is the server's English of it (status_message, or status_note, which drops the Ray plumbing), said from
 * status_message_code/params while it is that message. */
export function statusMessage(task, text = task.status_message) {
  if (!text) return text || "";
  return text === task.status_message ? sayMessage(task.status_message_code, task.status_message_params, text) : text;
}

/** A timeline entry's message in the page's language (message_code/params beside its English). */
export function eventMessage(e) {
  return sayMessage(e.message_code, e.message_params, e.message);
}

/** A failed task's hint in the page's language (its cause, the log's text, stays as it was written). */
/** A failure kind's name in the page's language (failure_kind.<kind>; the kind itself where none). */
export function failureKind(kind) {
  const key = `failure_kind.${kind}`;
  const said = t(key);
  return said === key ? kind : said;
}

export function failureHint(task) {
  return sayMessage(task.failure_hint_code, task.failure_hint_params, task.failure_hint);
}

/** Admission's warnings in the page's language: `r.warnings` (English, as the server always sent them) said from
 * `r.warning_messages` (`{code, params}` or null, one per warning; an ApiError's `warningMessages`). */
export function warningTexts(r) {
  const coded = r.warning_messages || r.warningMessages || [];
  return (r.warnings || []).map((w, i) => (coded[i] ? sayMessage(coded[i].code, coded[i].params, w) : w));
}

/** An environment's description and notes in the page's language where Argus wrote them (GET /api/v2/envs:
 * `description_code`, `note_messages`); an admin's description and the probe's other notes as written. */
export function envDescription(env) {
  return env.description_code ? sayMessage(env.description_code, {}, env.description) : (env.description || "");
}

export function envNotes(env) {
  return warningTexts({ warnings: env.notes, warning_messages: env.note_messages });
}
