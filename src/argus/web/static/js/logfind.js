// The log pane's search, first error and wrap toggle (issue 25, "Logs"): matches among the lines in the
// window (static/js/logpane.js), and past its ends the server's whole-file search (…/logs/search), after
// which the pane loads a window around the matching line. Split from logpane.js to keep both small.
import { api, t } from "./common.js";
import { ERROR_LINE, findAll, searchPattern, textRange } from "./logview.js";

/** `pane`: {logEl, base, attempt(), win() → {winStart, winEnd, atEnd}, windowAt(offset), setFollowing(on)}. */
export function startFind({ logEl, base, attempt, win, windowAt, setFollowing }) {
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
    searchCount.textContent = matches.length ? t("task.log_matches", { i: current + 1, n: matches.length }) :
      (searchQ.value ? t("task.log_no_match") : "");
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
   * the server (…/logs/search, a bounded scan per request) and shown in a window loaded around it. */
  async function searchBeyond(by, from, query, regex) {
    const my = ++searching;
    let at = from;
    for (;;) {
      const q = new URLSearchParams({ q: query, regex: String(regex), attempt: String(attempt()), max: "1" });
      q.set(by > 0 ? "offset" : "before", String(at));
      let r;
      try { r = await api(`${base}/logs/search?${q}`); } catch (e) { searchCount.textContent = e.message; return null; }
      if (my !== searching) return null;
      if (r.matches.length) {
        const offset = r.matches[0].offset;
        await windowAt(offset);
        const chunk = logEl.querySelector(`.chunk[data-start="${offset}"]`);
        return (chunk && chunk.firstElementChild) || null;
      }
      if (r.complete) return null;
      at = by > 0 ? r.scanned_to : r.scanned_from;
      const done = by > 0 ? r.scanned_to / Math.max(1, r.size) : 1 - r.scanned_from / Math.max(1, r.size);
      searchCount.textContent = t("task.log_searching", { pct: Math.round(done * 100) });
    }
  }

  async function step(by) {
    if (!searchQ.value || searchQ.classList.contains("invalid")) return;
    if (!matches.length) runSearch(false);
    const { winStart, winEnd, atEnd } = win();
    const last = by > 0 ? current >= matches.length - 1 : current <= 0;
    const more = by > 0 ? !atEnd : winStart > 0;
    if (last && more) {
      const line = await searchBeyond(by, by > 0 ? winEnd : winStart, searchQ.value, searchRe.checked);
      if (line) {
        runSearch(false);
        current = Math.max(0, matches.findIndex((m) => m.line === line));
        showCurrent(true);
        return;
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

  // first error: in the window when it holds the log's start, else the server finds it anywhere
  document.getElementById("log-error").addEventListener("click", async () => {
    for (const old of logEl.querySelectorAll(".ln.err")) old.classList.remove("err");
    let line = win().winStart === 0 ? Array.from(logEl.querySelectorAll(".ln")).find((ln) => ERROR_LINE.test(ln.textContent)) : null;
    if (!line && !(win().winStart === 0 && win().atEnd)) line = await searchBeyond(1, 0, ERROR_LINE.source, true);
    if (!line) { searchCount.textContent = t("task.log_no_error"); return; }
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

  /** The window's lines changed (fetched, dropped, filtered): search them again, keeping the current match. */
  return { refresh() { if (searchQ.value) runSearch(false); } };
}
