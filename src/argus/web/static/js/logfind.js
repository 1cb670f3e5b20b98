// The log pane's search, first error and wrap toggle (issue 25, "Logs"): matches among the lines in the
// window (static/js/logpane.js), and past its ends the server's whole-file search (…/logs/search), after
// which the pane loads a window around the matching line; past the file's end the search wraps to its start
// (and back). The first error is the server's answer over the whole log of every node (…/logs/first-error,
// issue 37): its line number, the worker that printed it and its exception. Split from logpane.js.
import { api, t } from "./common.js";
import { findAll, searchPattern, textRange } from "./logview.js";
import { errorMessage } from "./messages.js";

const FILE_END = Number.MAX_SAFE_INTEGER; // "before" the end of the file, whatever its size now

/** `pane`: {logEl, base, attempt(), node(), showNode(k), win() → {winStart, winEnd, atEnd}, windowAt(offset),
 * setFollowing(on)}. */
export function startFind({ logEl, base, attempt, node, showNode, win, windowAt, setFollowing }) {
  const searchQ = document.getElementById("log-q");
  const searchRe = document.getElementById("log-re");
  const searchCount = document.getElementById("log-count");
  const highlights = typeof CSS !== "undefined" && CSS.highlights && typeof Highlight === "function";

  // ---- search: in the window, then on the server for matches beyond it ---------------------------
  let matches = []; // [{line, start, end}] over the shown lines in the page
  let current = -1;
  let searching = 0;

  function showCurrent(scroll) {
    for (const old of logEl.querySelectorAll(".ln.cur")) old.classList.remove("cur");
    const m = matches[current];
    const { winStart, atEnd } = win();
    const loadedOnly = !(winStart === 0 && atEnd);
    const at = { i: current + 1, n: matches.length };
    if (matches.length) searchCount.textContent = loadedOnly ? t("task.log_matches_loaded", at) : t("task.log_matches", at);
    else if (!searchQ.value) searchCount.textContent = "";
    else searchCount.textContent = loadedOnly ? t("task.log_no_match_loaded") : t("task.log_no_match");
    if (highlights) {
      CSS.highlights.delete("log-cur");
      const r = m && textRange(m.line, m.start, m.end);
      if (r) CSS.highlights.set("log-cur", new Highlight(r));
    }
    if (!m) return;
    m.line.classList.add("cur");
    if (scroll) {
      setFollowing(false);
      m.line.scrollIntoView({ block: "center", inline: "nearest" });
    }
  }

  function runSearch(scroll) {
    const keep = matches[current];
    let pattern = null;
    searchQ.classList.remove("invalid");
    try {
      pattern = searchPattern(searchQ.value, searchRe.checked);
    } catch {
      searchQ.classList.add("invalid");
      searchQ.title = t("task.log_bad_regex");
    }
    if (!searchQ.classList.contains("invalid")) searchQ.removeAttribute("title");
    matches = [];
    if (pattern) {
      for (const line of logEl.querySelectorAll(".ln:not(.log-hide)")) {
        for (const [start, end] of findAll(line.textContent, pattern)) matches.push({ line, start, end });
      }
    }
    if (highlights) {
      const all = new Highlight();
      for (const m of matches.slice(0, 2000)) { const r = textRange(m.line, m.start, m.end); if (r) all.add(r); }
      CSS.highlights.set("log-hit", all);
    }
    current = -1;
    if (keep && keep.line.isConnected) current = matches.findIndex((m) => m.line === keep.line && m.start === keep.start);
    if (current < 0 && matches.length) current = 0;
    showCurrent(scroll && current >= 0);
  }

  /** The next (by > 0: after byte `from`) or previous (before `from`) matching line in the whole file, found by
   * the server (…/logs/search, a bounded scan per request): {offset, line}; null when there is none, undefined
   * when a newer search took over or the server refused (the refusal is shown). */
  async function searchBeyond(by, from, query, regex) {
    const my = ++searching;
    let at = from;
    for (;;) {
      const q = new URLSearchParams({ q: query, regex: String(regex), attempt: String(attempt()), node: String(node()), max: "1" });
      q.set(by > 0 ? "offset" : "before", String(at));
      let r;
      try { r = await api(`${base}/logs/search?${q}`); } catch (e) { searchCount.textContent = errorMessage(e); return undefined; }
      if (my !== searching) return undefined;
      if (r.matches.length) return r.matches[0];
      if (r.complete) return null;
      at = by > 0 ? r.scanned_to : r.scanned_from;
      const done = by > 0 ? r.scanned_to / Math.max(1, r.size) : 1 - r.scanned_from / Math.max(1, r.size);
      searchCount.textContent = t("task.log_searching", { pct: Math.round(done * 100) });
    }
  }

  /** The line element of a match the server found ({offset, line}): the one with that number when the window
   * holds it, else the first line of a window loaded around its offset. */
  async function lineOf(m) {
    const shown = m.line ? logEl.querySelector(`.ln[data-n="${m.line}"]`) : null;
    if (shown) return shown;
    await windowAt(m.offset);
    const chunk = logEl.querySelector(`.chunk[data-start="${m.offset}"]`);
    return (chunk && chunk.firstElementChild) || null;
  }

  async function step(by) {
    if (!searchQ.value || searchQ.classList.contains("invalid")) return;
    if (!matches.length) runSearch(false);
    const { winStart, winEnd, atEnd } = win();
    const last = by > 0 ? current >= matches.length - 1 : current <= 0;
    if (last && !(winStart === 0 && atEnd)) {
      // past the window: on to the file's end (start), then around from its start (end)
      const query = searchQ.value, regex = searchRe.checked;
      const more = by > 0 ? !atEnd : winStart > 0;
      let m = more ? await searchBeyond(by, by > 0 ? winEnd : winStart, query, regex) : null;
      if (m === null) m = await searchBeyond(by, by > 0 ? 0 : FILE_END, query, regex);
      if (m === undefined) return;
      if (m) {
        const line = await lineOf(m);
        if (line) {
          runSearch(false);
          current = Math.max(0, matches.findIndex((x) => x.line === line));
          showCurrent(true);
          return;
        }
      }
    }
    if (!matches.length) { searchCount.textContent = t("task.log_no_match"); return; }
    current = (current + by + matches.length) % matches.length;
    showCurrent(true);
  }

  searchQ.addEventListener("input", () => { current = -1; matches = []; searching++; runSearch(true); });
  searchRe.addEventListener("change", () => { current = -1; matches = []; searching++; runSearch(true); });
  searchQ.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") { ev.preventDefault(); step(ev.shiftKey ? -1 : 1); }
  });
  document.getElementById("log-next").addEventListener("click", () => step(1));
  document.getElementById("log-prev").addEventListener("click", () => step(-1));

  // first error: the server's, over the whole log of every node; the line is shown when it is in this log
  const errInfo = document.getElementById("log-errinfo");
  let asking = 0;
  document.getElementById("log-error").addEventListener("click", async () => {
    for (const old of logEl.querySelectorAll(".ln.err")) old.classList.remove("err");
    const my = ++asking;
    errInfo.hidden = false;
    errInfo.textContent = t("task.log_error_looking");
    let r;
    try { r = await api(`${base}/logs/first-error?attempt=${attempt()}`); } catch (e) { if (my === asking) errInfo.textContent = errorMessage(e); return; }
    if (my !== asking) return;
    const e = r.first;
    if (!e) { errInfo.textContent = t("task.log_no_error"); return; }
    const where = [e.worker ? `(${e.worker})` : "", e.rank, r.nodes.length > 1 ? t("task.log_on_node", { node: e.node }) : ""]
      .filter(Boolean).join(" ");
    const parts = [where ? t("task.log_error_at_where", { line: e.line, where }) : t("task.log_error_at", { line: e.line })];
    if (e.exception && !e.text.includes(e.exception)) parts.push(e.exception);
    errInfo.replaceChildren(document.createTextNode(parts.join(" — ")));
    if (e.node !== node()) await showNode(e.node); // another node's log: the pane switches to it
    if (my !== asking) return;
    const line = await lineOf(e);
    if (my !== asking || !line) return;
    line.classList.add("err");
    setFollowing(false);
    line.scrollIntoView({ block: "center", inline: "nearest" });
  });

  const wrapBtn = document.getElementById("log-wrap");
  function setWrap(on) {
    logEl.classList.toggle("nowrap", !on);
    wrapBtn.setAttribute("aria-pressed", String(on));
    try { localStorage.setItem("argus.log.wrap", on ? "1" : "0"); } catch { /* storage may be off */ }
  }
  wrapBtn.addEventListener("click", () => setWrap(logEl.classList.contains("nowrap")));
  try { setWrap(localStorage.getItem("argus.log.wrap") !== "0"); } catch { setWrap(true); }

  // ---- the filter's text over the whole log: the server's matching lines, listed with their numbers --------
  const filterQ = document.getElementById("log-filter");
  const filterRe = document.getElementById("log-filter-re");
  const allBtn = document.getElementById("log-filter-all");
  const hitsEl = document.getElementById("log-hits");
  const MAX_HITS = 200;
  let listing = 0;
  let listedFor = "";

  function showAllButton() {
    const { winStart, atEnd } = win();
    const query = filterQ.classList.contains("invalid") ? "" : filterQ.value;
    allBtn.hidden = !query || (winStart === 0 && atEnd);
    if (`${filterRe.checked}:${query}` !== listedFor) { listing++; listedFor = ""; hitsEl.hidden = true; hitsEl.replaceChildren(); }
  }

  function hitButton(m) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "log-hit";
    const num = document.createElement("span");
    num.className = "log-hit-n";
    num.textContent = m.line ?? "";
    b.append(num, document.createTextNode(m.text));
    b.addEventListener("click", async () => {
      const line = await lineOf(m);
      if (!line) return;
      for (const old of logEl.querySelectorAll(".ln.cur")) old.classList.remove("cur");
      line.classList.add("cur");
      setFollowing(false);
      line.scrollIntoView({ block: "center", inline: "nearest" });
    });
    const li = document.createElement("li");
    li.append(b);
    return li;
  }

  /** The first MAX_HITS lines of the whole log that match the filter's text (…/logs/search, bounded scans). */
  async function listAll() {
    const my = ++listing;
    const query = filterQ.value, regex = filterRe.checked;
    listedFor = `${regex}:${query}`;
    const hits = [];
    let at = 0, complete = false;
    const head = document.createElement("p");
    head.className = "muted";
    head.textContent = t("task.log_searching", { pct: 0 });
    hitsEl.replaceChildren(head);
    hitsEl.hidden = false;
    while (hits.length < MAX_HITS && !complete) {
      const q = new URLSearchParams({ q: query, regex: String(regex), attempt: String(attempt()), node: String(node()), offset: String(at),
        max: String(MAX_HITS - hits.length) });
      let r;
      try { r = await api(`${base}/logs/search?${q}`); } catch (e) { if (my === listing) head.textContent = errorMessage(e); return; }
      if (my !== listing) return;
      hits.push(...r.matches);
      at = r.scanned_to;
      complete = r.complete;
      head.textContent = t("task.log_searching", { pct: Math.round((100 * r.scanned_to) / Math.max(1, r.size)) });
    }
    if (!hits.length) head.textContent = t("task.log_hits_none");
    else if (complete) head.textContent = t("task.log_hits", { n: hits.length });
    else head.textContent = t("task.log_hits_first", { n: hits.length });
    const list = document.createElement("ol");
    list.append(...hits.map(hitButton));
    hitsEl.append(list);
  }
  allBtn.addEventListener("click", listAll);

  /** The window's lines changed (fetched, dropped, filtered): search them again, keeping the current match. */
  return { refresh() { if (searchQ.value) runSearch(false); showAllButton(); } };
}
