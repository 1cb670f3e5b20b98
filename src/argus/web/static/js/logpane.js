// The task page's log pane (issue 25, "Logs"): a window of a few thousand lines over the whole file.
// A GB log is never downloaded: the pane opens at the tail (a range GET of whole lines), fetches earlier
// ranges as the user scrolls up and later ones as they scroll down, and drops the lines farthest from
// the viewport once more than MAX_LINES are in the page, so the DOM and the JS heap stay flat. The
// window is made of `div.chunk`s, each the lines of one byte range [data-start, data-end): offsets stay
// exact whatever was dropped. New lines come over SSE (the server wakes on inotify) and are appended
// while the window reaches the live end. The filter (text/regex, actor prefix, level) hides lines, the
// search finds text in the window and asks the server (…/logs/search) for matches beyond it. Lines are
// numbered in a gutter: the server says the number of a range's first line (X-Line, from its index of the
// log) and the numbers run on from chunk to chunk (issue 37).
import { api, fmtTime, t } from "./common.js";
import { startFind } from "./logfind.js";
import { actorPrefix, lineLevel, lineNode, searchPattern } from "./logview.js";

const MAX_LINES = 5000;          // lines kept in the page; the farthest chunks leave the DOM
const CHUNK_BYTES = 96 * 1024;   // one range read (~1500 verl lines): small next to MAX_LINES, so trimming is fine-grained
const EDGE_PX = 400;             // this close to the top (bottom), an earlier (later) range is fetched
const MAX_PREFIXES = 200;        // actor prefixes offered in the filter

function mb(n) { return (n / 1048576).toFixed(n < 10 * 1048576 ? 2 : 0); }

export function startLog(base, taskId, { onEnd }) {
  const logEl = document.getElementById("log");
  const attemptSel = document.getElementById("attempt");
  const nodeSel = document.getElementById("log-node");
  const followBtn = document.getElementById("follow");
  const stateEl = document.getElementById("log-state");
  const windowEl = document.getElementById("log-trimmed");
  const filterQ = document.getElementById("log-filter");
  const filterRe = document.getElementById("log-filter-re");
  const prefixSel = document.getElementById("log-prefix");
  const levelSel = document.getElementById("log-level");
  const filterCount = document.getElementById("log-fcount");

  let attempt = null;
  let shown = null;       // the attempt chosen in the selector
  let node = 1;           // whose log: node K of a multi-node task (1: the first node, the launcher's)
  let source = null;
  let following = true;
  let gen = 0;            // bumped whenever the window is replaced: stale fetches are ignored
  let winStart = 0, winEnd = 0, liveEnd = 0, atEnd = true;
  let lines = 0;          // .ln elements in the page
  let loading = false;    // a range read at the top or bottom is in flight
  let replacing = false;  // the window is being replaced (windowAt)
  let autoLoads = 0;      // ranges read without a scroll (a filter left too few lines): bounded per action
  let autoUp = true;
  let opens = 0;
  let filter = { pattern: null, prefix: "", level: "" };
  const prefixes = new Map(); // label → name, in the order seen

  /** The query naming the log shown: the attempt, and the node when it is not the first. */
  function which() { return `attempt=${attempt}${node > 1 ? `&node=${node}` : ""}`; }

  // ---- ranges and chunks ---------------------------------------------------------------------
  async function fetchLines(offset, limit) {
    // whole lines only (X-Offset: where they start; X-Next-Offset: where the next range begins)
    let q = `${base}/logs?${which()}&lines=true&offset=${offset}`;
    if (limit !== null) q += `&limit=${limit}`;
    const r = await api(q, { raw: true });
    if (!r.ok) return null;
    const text = await r.text();
    const out = text.split("\n");
    if (out.length && out[out.length - 1] === "") out.pop();
    const line = r.headers.get("X-Line");
    return { start: Number(r.headers.get("X-Offset")), end: Number(r.headers.get("X-Next-Offset")), lines: out,
      line: line ? Number(line) : null };
  }

  /** Number every chunk's lines from one whose first line's number the server said: the chunks are contiguous
   * ranges of whole lines, so the numbers run on (a number is an attribute the gutter shows, never text). */
  function numberLines() {
    const chunks = Array.from(logEl.children);
    const anchor = chunks.findIndex((c) => c.dataset.line);
    if (anchor < 0) return;
    for (let i = anchor + 1; i < chunks.length; i++) {
      if (!chunks[i].dataset.line) chunks[i].dataset.line = Number(chunks[i - 1].dataset.line) + chunks[i - 1].childElementCount;
    }
    for (let i = anchor - 1; i >= 0; i--) {
      if (!chunks[i].dataset.line) chunks[i].dataset.line = Math.max(1, Number(chunks[i + 1].dataset.line) - chunks[i].childElementCount);
    }
    for (const c of chunks) {
      if (c.dataset.numbered === c.dataset.line) continue;
      let n = Number(c.dataset.line);
      for (const ln of c.children) ln.dataset.n = n++;
      c.dataset.numbered = c.dataset.line;
    }
  }

  const enc = new TextEncoder();
  /** Each line of a fetched range gets its time as a tooltip: when the log had reached it, from the driver's
   * clock beside the log (…/logs/times: a stamp after each write holding "step:"; no clock, no times). */
  async function stampTimes(chunk, raw) {
    const start = Number(chunk.dataset.start), end = Number(chunk.dataset.end);
    let r;
    try { r = await api(`${base}/logs/times?${which()}&offset=${start}&end=${end}`); } catch { return; }
    if (!r.times.length || !chunk.isConnected) return;
    const lines = chunk.children;
    let pos = start, k = 0;
    for (let i = 0; i < raw.length && i < lines.length; i++) {
      while (k < r.times.length && r.times[k][0] <= pos) k++;
      if (k >= r.times.length) break;
      lines[i].title = t("task.log_line_time", { time: fmtTime(r.times[k][1] * 1000) });
      pos += enc.encode(raw[i]).length + 1;
    }
  }

  function makeChunk(start, end, raw, line = null, fetched = true) {
    const chunk = document.createElement("div");
    chunk.className = "chunk";
    chunk.dataset.start = start;
    chunk.dataset.end = end;
    if (line) chunk.dataset.line = line;
    if (fetched) stampTimes(chunk, raw);
    const tb = new Map();
    let newPrefix = false;
    for (const line of raw) {
      const ln = lineNode(line); // ANSI colours as spans, tqdm's \r collapsed (logview.js)
      const text = ln.textContent;
      const p = actorPrefix(text);
      if (p) {
        ln.dataset.pfx = p.label;
        ln.dataset.actor = p.name;
        if (!prefixes.has(p.label) && prefixes.size < MAX_PREFIXES) { prefixes.set(p.label, p.name); newPrefix = true; }
      }
      const level = lineLevel(text, tb);
      if (level) ln.dataset.lvl = level;
      if (!visible(ln)) ln.classList.add("log-hide");
      chunk.append(ln);
    }
    lines += raw.length;
    if (newPrefix) renderPrefixes();
    return chunk;
  }

  function removeChunk(chunk) {
    lines -= chunk.childElementCount;
    chunk.remove();
  }

  /** Keep at most MAX_LINES: drop whole chunks from the `side` ("top" or "bottom") away from what was just added,
   * never one on screen (the cap gives way instead: a chunk is one range read, a few thousand lines at most). */
  function trim(side) {
    const box = logEl.getBoundingClientRect();
    while (lines > MAX_LINES && logEl.childElementCount > 1) {
      const edge = side === "top" ? logEl.firstElementChild : logEl.lastElementChild;
      const r = edge.getBoundingClientRect();
      // (a chunk whose lines the filter all hides has no height: never on screen)
      const onScreen = r.height > 0 && r.bottom > box.top - EDGE_PX && r.top < box.bottom + EDGE_PX && !(side === "top" && following);
      if (onScreen) break;
      if (side === "top") {
        const first = logEl.firstElementChild;
        const h = logEl.scrollHeight;
        removeChunk(first);
        if (!following) logEl.scrollTop -= h - logEl.scrollHeight; // what the user reads does not move
        winStart = Number(logEl.firstElementChild.dataset.start);
      } else {
        removeChunk(logEl.lastElementChild);
        winEnd = Number(logEl.lastElementChild.dataset.end);
        atEnd = false;
      }
    }
    showWindow();
  }

  function showWindow() {
    const whole = winStart === 0 && atEnd;
    windowEl.hidden = whole;
    if (!whole) windowEl.textContent = t("task.log_window", { from: mb(winStart), to: mb(winEnd), size: mb(Math.max(liveEnd, winEnd)) });
    logEl.dataset.start = winStart;
    logEl.dataset.end = winEnd;
  }

  function afterChange() {
    numberLines();
    countFilter();
    find.refresh();
    if (following && atEnd) logEl.scrollTop = logEl.scrollHeight;
    else if (following) loadAfter(); // lines arrived while the window was elsewhere: catch up
    reachFurther();
  }

  /** A filter that hides most lines leaves nothing to scroll: fetch further ranges, a bounded number per action. */
  function reachFurther() {
    if (following || logEl.scrollHeight > logEl.clientHeight + EDGE_PX || autoLoads >= 8) return;
    if (autoLoads === 0) autoUp = winStart > 0; // one direction per action: up from the tail, down from the start
    if (autoUp ? winStart <= 0 : atEnd) return;
    autoLoads++;
    setTimeout(autoUp ? loadBefore : loadAfter, 0);
  }

  function clear() {
    gen++;
    logEl.replaceChildren();
    lines = 0;
    loading = false;
    replacing = true; // until the new window is in: no range read may extend the old one's offsets
  }

  /** Replace the window with the lines around byte `offset` (a line start), or the tail when offset is null. */
  async function windowAt(offset) {
    clear();
    const my = gen;
    try { await replaceWindow(offset, my); } finally { if (my === gen) replacing = false; }
    if (my === gen) { showWindow(); afterChange(); }
  }

  async function replaceWindow(offset, my) {
    if (offset === null) {
      const r = await fetchLines(Math.max(0, liveEnd - CHUNK_BYTES), liveEnd - Math.max(0, liveEnd - CHUNK_BYTES));
      if (!r || my !== gen) return;
      logEl.append(makeChunk(r.start, r.end, r.lines, r.line));
      winStart = r.start; winEnd = r.end; atEnd = r.end >= liveEnd;
    } else {
      const lo = Math.max(0, offset - CHUNK_BYTES / 2);
      const [before, after] = await Promise.all([fetchLines(lo, offset - lo),
        fetchLines(offset, Math.max(0, Math.min(CHUNK_BYTES / 2, liveEnd - offset)))]);
      if (!before || !after || my !== gen) return;
      logEl.append(makeChunk(before.start, before.end, before.lines, before.line),
        makeChunk(after.start, after.end, after.lines, after.line));
      winStart = before.start; winEnd = after.end; atEnd = after.end >= liveEnd;
    }
  }

  async function loadBefore() {
    if (loading || replacing || winStart <= 0) return;
    loading = true;
    const my = gen;
    try {
      let size = CHUNK_BYTES;
      let r = null;
      for (;;) { // a line longer than the range: read a bigger one
        const lo = Math.max(0, winStart - size);
        r = await fetchLines(lo, winStart - lo);
        if (!r || my !== gen || r.end > r.start || lo === 0) break;
        size *= 4;
      }
      if (!r || my !== gen || r.end <= r.start) return;
      const h = logEl.scrollHeight;
      logEl.prepend(makeChunk(r.start, r.end, r.lines, r.line));
      logEl.scrollTop += logEl.scrollHeight - h; // the line under the user's eyes stays put
      winStart = r.start;
      trim("bottom");
      afterChange();
    } finally { if (my === gen) loading = false; }
  }

  async function loadAfter() {
    if (loading || replacing || atEnd) return;
    loading = true;
    const my = gen;
    try {
      let size = CHUNK_BYTES;
      let r = null;
      for (;;) {
        const limit = Math.min(size, liveEnd - winEnd); // never past what the live stream will append
        r = await fetchLines(winEnd, limit);
        if (!r || my !== gen || r.end > r.start || limit < size) break;
        size *= 4;
      }
      if (!r || my !== gen) return;
      if (r.end > r.start) logEl.append(makeChunk(r.start, r.end, r.lines, r.line));
      winEnd = Math.max(winEnd, r.end);
      atEnd = winEnd >= liveEnd;
      trim("top");
      afterChange();
    } finally { if (my === gen) loading = false; }
  }

  logEl.addEventListener("scroll", () => {
    autoLoads = 0;
    // the pane only ever scrolls itself to the bottom: away from it, the user moved (scrollbar, keys, wheel)
    if (following && logEl.scrollHeight - logEl.scrollTop - logEl.clientHeight > 40) setFollowing(false);
    if (logEl.scrollTop < EDGE_PX) loadBefore();
    else if (logEl.scrollHeight - logEl.scrollTop - logEl.clientHeight < EDGE_PX) loadAfter();
  }, { passive: true });

  // ---- opening an attempt: the tail, then the live stream --------------------------------------
  async function open(n) {
    if (source) source.close();
    source = null;
    attempt = n;
    const token = ++opens;
    clear();
    const my = gen;
    document.getElementById("download").href = `${base}/logs?${which()}`;
    document.getElementById("download").setAttribute("download", `${taskId}-attempt-${n}${node > 1 ? `-node-${node}` : ""}.log`);
    // the tail: the whole lines of the last range; the live stream goes on from where they end
    const probe = await api(`${base}/logs?${which()}&offset=1000000000000000&limit=0`, { raw: true });
    if (token !== opens) return;
    if (!probe.ok) { replacing = false; return; }
    const size = Number(probe.headers.get("X-Next-Offset") || "0");
    const r = await fetchLines(Math.max(0, size - CHUNK_BYTES), null);
    if (token !== opens || !r || my !== gen) return;
    logEl.append(makeChunk(r.start, r.end, r.lines, r.line));
    winStart = r.start; winEnd = liveEnd = r.end; atEnd = true;
    replacing = false;
    showWindow();
    afterChange();
    stateEl.textContent = t("task.log_live");
    const es = new EventSource(`${base}/logs?${which()}&follow=true&offset=${liveEnd}`);
    source = es;
    // each event: complete lines, id = the byte offset after them (tqdm lines as last drawn: sse_lines)
    es.addEventListener("log", (ev) => {
      if (source !== es) return;
      const from = liveEnd;
      liveEnd = Number(ev.lastEventId) || liveEnd;
      if (atEnd && winEnd === from && !replacing) {
        logEl.append(makeChunk(from, liveEnd, ev.data.split("\n"), null, false)); // lines as last drawn: no byte offsets
        winEnd = liveEnd;
        trim(following ? "top" : "bottom"); // a reader above keeps their lines; the new ones are fetched again
        afterChange();
      } else {
        atEnd = false;
        showWindow();
        if (following && !replacing) loadAfter();
      }
    });
    es.addEventListener("end", () => {
      es.close();
      if (source === es) stateEl.textContent = t("task.log_ended");
      onEnd();
    });
    es.onerror = () => { if (es.readyState === EventSource.CLOSED) stateEl.textContent = t("task.log_lost"); };
  }

  function setFollowing(on) {
    following = on;
    followBtn.textContent = following ? t("task.pause") : t("task.resume");
    if (following) logEl.scrollTop = logEl.scrollHeight;
  }

  followBtn.addEventListener("click", () => setFollowing(!following));
  document.getElementById("jump").addEventListener("click", async () => {
    if (!atEnd) await windowAt(null);
    setFollowing(true);
  });
  document.getElementById("log-start").addEventListener("click", async () => {
    setFollowing(false);
    if (winStart > 0) await windowAt(0);
    logEl.scrollTop = 0;
  });
  attemptSel.addEventListener("change", () => { shown = Number(attemptSel.value); open(shown); });
  /** Show node k's log of the attempt on screen (the selector follows); resolves once its tail is in. */
  function showNode(k) {
    node = k;
    nodeSel.value = String(k);
    return open(attempt);
  }
  nodeSel.addEventListener("change", () => showNode(Number(nodeSel.value)));
  logEl.addEventListener("wheel", (ev) => { if (ev.deltaY < 0 && following) setFollowing(false); });
  logEl.addEventListener("keydown", (ev) => { if (["PageUp", "ArrowUp", "Home"].includes(ev.key) && following) setFollowing(false); });

  // ---- filter: text or regex, actor prefix, level; applies to lines fetched later too ------------
  function visible(ln) {
    if (filter.prefix) {
      const [kind, value] = [filter.prefix[0], filter.prefix.slice(2)];
      if ((kind === "n" ? ln.dataset.actor : ln.dataset.pfx) !== value) return false;
    }
    if (filter.level && ln.dataset.lvl !== filter.level) return false;
    if (filter.pattern) { filter.pattern.lastIndex = 0; if (!filter.pattern.test(ln.textContent)) return false; }
    return true;
  }

  function renderPrefixes() {
    const keep = prefixSel.value;
    const names = [...new Set(prefixes.values())];
    const opts = [new Option(t("task.log_all_actors"), "")];
    for (const name of names) {
      opts.push(new Option(`(${name} …)`, `n:${name}`));
      for (const [label, n] of prefixes) if (n === name && label !== name) opts.push(new Option(`  (${label})`, `p:${label}`));
    }
    prefixSel.replaceChildren(...opts);
    prefixSel.value = keep;
    prefixSel.disabled = prefixes.size === 0;
  }

  function countFilter() {
    const active = filter.pattern || filter.prefix || filter.level;
    logEl.classList.toggle("log-filtered", Boolean(active));
    if (!active) { filterCount.textContent = ""; return; }
    const shown = lines - logEl.querySelectorAll(".ln.log-hide").length;
    filterCount.textContent = t("task.log_filter_count", { n: shown, total: lines });
  }

  function applyFilter() {
    filterQ.classList.remove("invalid");
    filterQ.removeAttribute("title");
    let pattern = null;
    try {
      pattern = searchPattern(filterQ.value, filterRe.checked);
    } catch {
      filterQ.classList.add("invalid");
      filterQ.title = t("task.log_bad_regex");
    }
    filter = { pattern, prefix: prefixSel.value, level: levelSel.value };
    for (const ln of logEl.querySelectorAll(".ln")) ln.classList.toggle("log-hide", !visible(ln));
    countFilter();
    find.refresh();
    if (following && atEnd) logEl.scrollTop = logEl.scrollHeight;
    else reachFurther();
  }
  filterQ.addEventListener("input", applyFilter);
  filterRe.addEventListener("change", applyFilter);
  prefixSel.addEventListener("change", applyFilter);
  levelSel.addEventListener("change", applyFilter);
  for (const e of [filterQ, filterRe, prefixSel, levelSel]) e.addEventListener("input", () => { autoLoads = 0; });
  renderPrefixes();

  const find = startFind({
    logEl, base, setFollowing, windowAt,
    attempt: () => attempt,
    node: () => node,
    showNode,
    win: () => ({ winStart, winEnd, atEnd }),
  });

  return {
    /** The task's attempts changed: offer them, and open the latest while the user was on the latest. */
    attempts(tk) {
      const nodes = Math.max(1, tk.nnodes || 1);
      if (nodeSel.options.length !== nodes) { // a multi-node task: each node's log, the first node's by default
        nodeSel.replaceChildren(...Array.from({ length: nodes }, (_, i) =>
          new Option(i ? String(i + 1) : t("task.log_node_first"), String(i + 1))));
        nodeSel.value = String(node);
        document.getElementById("log-node-label").hidden = nodes < 2;
      }
      const n = Math.max(1, tk.attempts.length); // attempt 1's log exists to follow even before it starts
      const had = attemptSel.options.length;
      if (had === n) return;
      const onLatest = shown === null || shown === had;
      attemptSel.replaceChildren(...Array.from({ length: n }, (_, i) => new Option(`#${i + 1}`, String(i + 1))));
      if (onLatest) { attemptSel.value = String(n); shown = n; open(n); } else attemptSel.value = String(shown);
    },
  };
}
