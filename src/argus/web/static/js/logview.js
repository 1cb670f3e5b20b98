// The task log's line rendering and search (issue 25, "Logs"): pure functions, no page state.
// verl/Ray output is coloured (Ray prefixes nearly every line with "(TaskRunner pid=…)" in ANSI
// colours) and tqdm redraws its bar with carriage returns. A log line is user-controlled text: it
// only ever becomes DOM text nodes (textContent), never HTML.

// one escape sequence: CSI (ESC [ params final), OSC (ESC ] … BEL or ESC \), a 2-byte escape, or a lone ESC
const ESCAPE = /\x1b(?:\[([0-?]*)[ -/]*([@-~])|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_]|)/g;
const SGR_ONLY = /\x1b\[[0-9;:]*m/g;

/** tqdm's carriage-return redraws collapse into the last one: "a\rb\rc" → "c". A "\r" that ends the
 * line (a CRLF) is dropped. The colours set in the dropped part still apply to the kept text, so
 * their SGR sequences are kept in front of it. */
export function collapseCR(line) {
  let s = line.replace(/\r+$/, "");
  const at = s.lastIndexOf("\r");
  if (at < 0) return s;
  const dropped = s.slice(0, at);
  return (dropped.match(SGR_ONLY) || []).join("") + s.slice(at + 1);
}

function applySgr(params, st) {
  const codes = params === "" ? [0] : params.split(/[;:]/).map((p) => (p === "" ? 0 : Number(p)));
  for (let i = 0; i < codes.length; i++) {
    const c = codes[i];
    if (c === 0) { st.bold = false; st.fg = null; st.bg = null; }
    else if (c === 1) st.bold = true;
    else if (c === 22) st.bold = false;
    else if (c >= 30 && c <= 37) st.fg = c - 30;
    else if (c >= 90 && c <= 97) st.fg = c - 90 + 8;
    else if (c === 39) st.fg = null;
    else if (c >= 40 && c <= 47) st.bg = c - 40;
    else if (c >= 100 && c <= 107) st.bg = c - 100 + 8;
    else if (c === 49) st.bg = null;
    else if (c === 38 || c === 48) { // extended colour: 5;n (256 colours) or 2;r;g;b — only n < 16 kept
      const key = c === 38 ? "fg" : "bg";
      if (codes[i + 1] === 5) { const n = codes[i + 2]; if (n >= 0 && n < 16) st[key] = n; i += 2; }
      else if (codes[i + 1] === 2) i += 4;
    }
  }
}

/** ANSI text → [{text, bold, fg, bg}] (fg/bg: 0–15 or null). SGR sequences ("\x1b[…m") set the style;
 * every other escape sequence (cursor moves, erase line, titles) is dropped. */
export function ansiSegments(text) {
  const out = [];
  const st = { bold: false, fg: null, bg: null };
  let last = 0;
  const push = (s) => {
    if (!s) return;
    const prev = out[out.length - 1];
    if (prev && prev.bold === st.bold && prev.fg === st.fg && prev.bg === st.bg) prev.text += s;
    else out.push({ text: s, bold: st.bold, fg: st.fg, bg: st.bg });
  };
  ESCAPE.lastIndex = 0;
  for (let m = ESCAPE.exec(text); m; m = ESCAPE.exec(text)) {
    push(text.slice(last, m.index));
    if (m[2] === "m") applySgr(m[1], st);
    last = m.index + m[0].length;
  }
  push(text.slice(last));
  return out;
}

/** One log line as a `div.ln`: plain text, with styled spans where the line is coloured. */
export function lineNode(raw) {
  const div = document.createElement("div");
  div.className = "ln";
  const line = collapseCR(raw);
  if (!line.includes("\x1b")) { div.textContent = line; return div; }
  for (const seg of ansiSegments(line)) {
    if (!seg.bold && seg.fg === null && seg.bg === null) { div.append(document.createTextNode(seg.text)); continue; }
    const span = document.createElement("span");
    const cls = [];
    if (seg.bold) cls.push("ansi-b");
    if (seg.fg !== null) cls.push(`ansi-fg${seg.fg}`);
    if (seg.bg !== null) cls.push(`ansi-bg${seg.bg}`);
    span.className = cls.join(" ");
    span.textContent = seg.text;
    div.append(span);
  }
  return div;
}

/** The search's pattern: plain text (any case) or, with `regex`, a JavaScript regular expression.
 * Returns null for an empty query; throws SyntaxError for a bad regex. */
export function searchPattern(query, regex) {
  if (!query) return null;
  if (regex) return new RegExp(query, "g");
  return new RegExp(query.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "gi");
}

/** Every match of `pattern` in `text` as [start, end) pairs (empty matches skipped). */
export function findAll(text, pattern) {
  const out = [];
  pattern.lastIndex = 0;
  for (let m = pattern.exec(text); m; m = pattern.exec(text)) {
    if (m[0] === "") { pattern.lastIndex++; continue; }
    out.push([m.index, m.index + m[0].length]);
  }
  return out;
}

/** A DOM Range over [start, end) of `lineEl`'s text, across its spans' text nodes. */
export function textRange(lineEl, start, end) {
  const range = document.createRange();
  const walker = document.createTreeWalker(lineEl, NodeFilter.SHOW_TEXT);
  let pos = 0;
  let started = false;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const len = node.data.length;
    if (!started && start <= pos + len) { range.setStart(node, start - pos); started = true; }
    if (started && end <= pos + len) { range.setEnd(node, end - pos); return range; }
    pos += len;
  }
  return started ? range : null;
}

// ---- filter helpers: a line's Ray actor prefix and its level (what the filter row chooses by) ----
const PREFIX = /^\(([A-Za-z_][\w.]*)?(?:\s*pid=(\d+))?(?:,\s*ip=[^)\s]*)?\)/;

/** Ray's "(TaskRunner pid=4242, ip=10.0.0.1)" → {name: "TaskRunner", label: "TaskRunner pid=4242"}; null when
 * the line has no such prefix. The ip is dropped from the label: one actor is one pid on its node. */
export function actorPrefix(text) {
  const m = PREFIX.exec(text);
  if (!m || (!m[1] && !m[2])) return null;
  const name = m[1] || "pid";
  return { name, label: m[2] ? `${m[1] ? `${m[1]} ` : ""}pid=${m[2]}` : name, length: m[0].length };
}

const LEVEL_ERROR = /\b(?:ERROR|CRITICAL|FATAL)\b|Traceback \(most recent call last\)|^[\w.]*(?:Error|Exception)\b(?::|$)/;
const LEVEL_WARNING = /\bWARN(?:ING)?\b|\b\w*Warning:/;
const LEVEL_INFO = /\bINFO\b/;
const TRACEBACK = /^Traceback \(most recent call last\)/;

/** The level of a line of visible text: "error", "warning", "info" or "" (none said). A Python traceback is an
 * error from its "Traceback" line through its indented frames to the exception line; `tb` is a Map (one
 * per window of lines) that carries "inside a traceback" from line to line, per actor prefix, since Ray
 * interleaves the lines of several actors. */
export function lineLevel(text, tb) {
  const p = actorPrefix(text);
  const key = p ? p.label : "";
  const body = p ? text.slice(p.length).replace(/^ /, "") : text;
  if (TRACEBACK.test(body)) { tb.set(key, true); return "error"; }
  if (tb.get(key)) {
    if (/^\s/.test(body) || body === "" || /^During handling|^The above exception/.test(body)) return "error";
    tb.delete(key); // the exception line closes the traceback
    return "error";
  }
  if (LEVEL_ERROR.test(body)) return "error";
  if (LEVEL_WARNING.test(body)) return "warning";
  if (LEVEL_INFO.test(body)) return "info";
  return "";
}
