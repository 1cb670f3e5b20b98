// Metric charts: GET …/metrics (verl's `step:N - key:value` lines, parsed by the server; `times` from the
// driver's clock; `units` per key), uPlot charts of one or more chosen keys each ("＋ metric" adds one
// to a chart; each unit the server names gets its own y axis) with one line per key and source (a
// task; the Compare page passes several). RL curves are noisy, so each line is drawn raw (faint) and
// smoothed with TensorBoard's debiased EMA. Every chart of a page shares one cursor (uPlot's
// cursor.sync): hovering a step on one shows that step, and its values in the legend, on all of them.
// A drag zooms (x), a double-click resets; the zoom survives the periodic refresh because new data is
// set inside one uPlot batch that puts the zoomed x range back. A chart opens full screen (Esc leaves).
// Width follows the window (ResizeObserver). The task page refreshes every 10 s while the task runs.
import { uPlot } from "../vendor/charts.js";
import { api, el, fmtDuration, poll, t } from "./common.js";
import { KeyPicker, drawnKeys, groupOf, loadView, renderControls, saveView, xLabel } from "./chart_picker.js";
import { startCompareLink } from "./compare_link.js";

// Shown first when present: score (verl's critic/score/mean before any other reward/score key), KL,
// entropy, response length, throughput, loss. Each entry: alternatives in order of preference.
const PREFERRED = [[/score\/mean/, /reward|score/], [/kl/], [/entropy/], [/response_length\/mean/], [/throughput/], [/loss/]];
const MAX_DEFAULT = 4;
export const COLORS = ["#2b6cb0", "#c05621", "#2f855a", "#9b2c2c", "#6b46c1", "#b7791f", "#2c7a7b", "#97266d"];
const HEIGHT = 240;
const RETAIN = 1; // uPlot.join: keep a null (a nan/inf value) as a gap; a step a source lacks is spanned

// TensorBoard's smoothing: s_k = w·s_{k-1} + (1−w)·y_k over finite points, divided by (1 − w^k) so the
// start is not pulled towards 0. A non-finite value is a gap and does not move the average.
export function ema(ys, weight) {
  const out = new Array(ys.length);
  let last = 0, k = 0;
  for (let i = 0; i < ys.length; i++) {
    const y = ys[i];
    if (y === null || !Number.isFinite(y)) { out[i] = null; continue; }
    k += 1;
    last = last * weight + (1 - weight) * y;
    out[i] = weight > 0 ? last / (1 - weight ** k) : y;
  }
  return out;
}

function num(v) { return typeof v === "number" ? v : null; } // "nan"/"inf"/"-inf" draw as gaps

// [xs, ys] of one key of one source for the x mode; steps with no clock time are left out of time axes.
export function xy(metrics, key, mode, log) {
  const times = metrics.times || {};
  let t0 = Infinity; // a loop, not Math.min(...values): thousands of steps would overflow the call's arguments
  for (const at of Object.values(times)) if (at < t0) t0 = at;
  const xs = [], ys = [];
  for (const [step, v] of metrics.points[key] || []) {
    let x = step;
    if (mode !== "step") {
      const at = times[step];
      if (at === undefined) continue;
      x = mode === "wall" ? at : at - t0;
    }
    let y = num(v);
    if (log && y !== null && y <= 0) y = null; // a log axis cannot show 0 or less
    xs.push(x); ys.push(y);
  }
  return [xs, ys];
}

function download(name, href) {
  const a = el("a", { href, download: name });
  document.body.append(a);
  a.click();
  a.remove();
}

export function downloadText(name, text, type) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  download(name, url);
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

function csvCell(v) { const s = String(v ?? ""); return /[",\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s; }

// One row per (source, step): task_id, step, unix time (blank without a clock), one column per key,
// values exactly as the API gave them ("nan" stays "nan").
export function metricsCsv(sources, keys) {
  const lines = [["task_id", "step", "unix_time", ...keys].map(csvCell).join(",")];
  for (const s of sources) {
    const rows = new Map();
    keys.forEach((k, i) => {
      for (const [step, v] of s.metrics.points[k] || []) {
        if (!rows.has(step)) rows.set(step, new Array(keys.length).fill(""));
        rows.get(step)[i] = v;
      }
    });
    for (const step of [...rows.keys()].sort((a, b) => a - b)) {
      lines.push([s.id, step, s.metrics.times?.[step] ?? "", ...rows.get(step)].map(csvCell).join(","));
    }
  }
  return `${lines.join("\n")}\n`;
}

function safeName(key) { return key.replace(/[^\w.-]+/g, "_"); }

// The name of a unit on its y axis (the server names each key's unit: GET …/metrics `units`; a key it
// leaves out is a plain number, whose axis has no label).
const UNIT_LABELS = { s: () => t("charts.unit_s"), ms: () => t("charts.unit_ms"), tokens: () => t("charts.unit_tokens"),
  tokens_per_s: () => t("charts.unit_tokens_per_s"), gib: () => t("charts.unit_gib") };
function unitLabel(unit) { return unit ? (UNIT_LABELS[unit] ? UNIT_LABELS[unit]() : unit) : ""; }
const DASHES = [undefined, [6, 4], [2, 3], [10, 3, 2, 3]]; // Compare: one colour per run, one dash per key
const FULL_PAD = 24;
const STEP_INCRS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10000, 20000, 50000, 100000]; // whole steps

// One chart: one or more keys over every source, each key's unit on its own y axis. Keeps its zoom
// (x range) across new data and rebuilds. `keys` is the view's own array for this chart (edits to it
// are the view's).
class Chart {
  constructor(board, keys) {
    this.board = board;
    this.keys = keys;
    this.zoom = null;
    this.plot = null;
    this.updating = false;
    this.shape = "";
    this.full = false;
    this.names = el("span", { class: "chart-keys" });
    this.adder = el("select", { class: "chart-add", "aria-label": t("charts.add_metric") });
    this.adder.addEventListener("change", () => {
      const k = this.adder.value;
      this.adder.value = "";
      if (k) board.addKey(this, k);
    });
    this.fullBtn = el("button", { type: "button", class: "link chart-full", onclick: () => this.setFull(!this.full) },
      t("charts.fullscreen"));
    const bar = el("span", { class: "charts-actions" }, this.adder,
      el("button", { type: "button", class: "link chart-png", onclick: () => this.png() }, "PNG"),
      el("button", { type: "button", class: "link chart-csv", onclick: () => this.csv() }, "CSV"),
      this.fullBtn,
      el("button", { type: "button", class: "link chart-remove", title: t("charts.remove"), "aria-label": t("charts.remove"),
        onclick: () => board.removeChart(this) }, "×"));
    this.wrap = el("figure", { class: "chart charts-chart", "data-points": "0" }, el("figcaption", {}, this.names, bar));
    this.wrap._chart = this; // for tests and the console: the uPlot instance is this.plot
    this.caption();
  }

  // The caption: each key (with its own × where the chart holds several), and the keys it could add.
  caption() {
    this.wrap.dataset.key = this.keys[0];
    this.wrap.dataset.keys = this.keys.join("|");
    const several = this.keys.length > 1;
    this.names.replaceChildren(...this.keys.map((k) => el("span", { class: "chart-key mono", "data-key": k }, k,
      several ? el("button", { type: "button", class: "link chart-drop-key", title: t("charts.remove_metric"),
        "aria-label": `${t("charts.remove_metric")}: ${k}`, onclick: () => this.board.dropKey(this, k) }, "×") : null)));
    this.options(this.board.keys);
  }

  // The "add a metric" list: every key of the runs not on this chart yet, grouped by prefix.
  options(keys) {
    const sig = `${keys.join("\n")}\t${this.keys.join("\n")}`;
    if (sig === this.optionsSig) return;
    this.optionsSig = sig;
    const groups = new Map();
    for (const k of keys) {
      if (this.keys.includes(k)) continue;
      const g = groupOf(k);
      if (!groups.has(g)) groups.set(g, []);
      groups.get(g).push(k);
    }
    this.adder.replaceChildren(el("option", { value: "" }, t("charts.add_metric")),
      ...[...groups].map(([g, ks]) => el("optgroup", { label: g ? `${g}/` : t("charts.ungrouped") },
        ...ks.map((k) => el("option", { value: k }, k)))));
    this.adder.hidden = groups.size === 0;
  }

  // The units of this chart's keys, in order of first use: the first on the left axis ("y"), the next
  // on the right, more alternating.
  unitsUsed() {
    const units = this.board.units;
    return [...new Set(this.keys.map((k) => units[k] || ""))];
  }

  // What needs a new uPlot: the keys, the sources, their units, and the board's shape (axis kind, scale, raw lines).
  shapeOf() {
    const units = this.board.units;
    return [this.board.shape, this.board.sources.map((s) => s.id).join(","),
      this.keys.map((k) => `${k}=${units[k] || ""}`).join(",")].join("\t");
  }

  data() {
    const { sources, view } = this.board;
    const w = view.smooth;
    const tables = [];
    for (const key of this.keys) {
      for (const s of sources) {
        const [xs, ys] = xy(s.metrics, key, view.x, view.log);
        tables.push([xs, ys, ema(ys, w)]);
      }
    }
    const points = tables.reduce((n, tb) => n + tb[0].length, 0);
    this.wrap.dataset.points = String(points);
    if (tables.length === 1) return tables[0];
    return uPlot.join(tables, tables.map(() => [RETAIN, RETAIN, RETAIN]));
  }

  opts(width, height) {
    const { sources, view } = this.board;
    const units = this.unitsUsed();
    const scaleOf = (key) => { const i = units.indexOf(this.board.units[key] || ""); return i === 0 ? "y" : `y${i}`; };
    const series = [{ label: xLabel(view.x),
      value: (u, v) => (v === null || v === undefined ? "—" : view.x === "wall" ? new Date(v * 1000).toLocaleString()
        : view.x === "rel" ? fmtDuration(v) : String(v)) }];
    const several = sources.length > 1;
    this.keys.forEach((key, ki) => {
      const unit = unitLabel(this.board.units[key]);
      sources.forEach((s, si) => {
        const color = COLORS[(several ? si : ki) % COLORS.length];
        const dash = several ? DASHES[ki % DASHES.length] : undefined;
        let label = several ? s.label : key;
        if (several && this.keys.length > 1) label = `${key} · ${s.label}`;
        if (units.length > 1 && unit) label = `${label} [${unit}]`;
        const scale = scaleOf(key);
        series.push({ label: `${label} (${t("charts.raw")})`, stroke: `${color}40`, width: 1, scale, dash,
          show: view.smooth > 0, points: { show: false } });
        series.push({ label, stroke: color, width: 2, scale, dash,
          points: { show: (s.metrics.points[key] || []).length < 60 } });
      });
    });
    const scales = { x: { time: view.x === "wall" } };
    const axes = [{ label: xLabel(view.x), incrs: view.x === "step" ? STEP_INCRS : undefined,
      values: view.x === "rel" ? (u, splits) => splits.map((v) => fmtDuration(v)) : undefined }];
    units.forEach((unit, i) => {
      const scale = i === 0 ? "y" : `y${i}`;
      scales[scale] = { distr: view.log ? 3 : 1 };
      const axis = { scale, side: i % 2 === 0 ? 3 : 1, grid: { show: i === 0 } };
      if (unit) axis.label = unitLabel(unit); // a plain number's axis has no label
      axes.push(axis);
    });
    return {
      width, height, scales, axes, series,
      // the shared cursor: hovering a step on one chart shows it on every chart of the page (all runs)
      cursor: { drag: { x: true, y: false }, sync: { key: this.board.syncKey } },
      hooks: { setScale: [(u, key) => { if (key === "x" && !this.updating) this.zoom = this.zoomOf(u); }] },
    };
  }

  // The x range when it is narrower than the data (a user zoom), else null.
  zoomOf(u) {
    const xs = u.data[0];
    if (!xs.length) return null;
    const { min, max } = u.scales.x;
    return min > xs[0] || max < xs[xs.length - 1] ? { min, max } : null;
  }

  size() { return this.full ? this.fullSize() : { width: this.board.width(), height: HEIGHT }; }

  build() {
    this.updating = true;
    this.shape = this.shapeOf();
    if (this.plot) this.plot.destroy();
    const { width, height } = this.size();
    this.plot = new uPlot(this.opts(width, height), this.data(), this.wrap);
    for (const [i, row] of [...this.plot.root.querySelectorAll(".u-legend .u-series")].entries()) {
      if (i > 0 && i % 2 === 1) row.hidden = true; // the raw lines' legend: same names, faint
    }
    this.plot.over.addEventListener("dblclick", () => { this.zoom = null; });
    if (this.zoom) this.plot.setScale("x", this.zoom);
    this.updating = false;
    if (this.full) this.plot.setSize(this.fullSize()); // the legend's height is known now
  }

  update() {
    if (!this.plot || this.shapeOf() !== this.shape) return this.build();
    this.updating = true;
    this.plot.batch(() => {
      this.plot.setData(this.data());
      if (this.zoom) this.plot.setScale("x", this.zoom);
    });
    this.updating = false;
  }

  // Full screen: the figure covers the window (the page's own overlay, so it works alike on every
  // browser and phone); Esc or the button leaves it.
  fullSize() {
    const cap = this.wrap.querySelector("figcaption")?.offsetHeight || 30;
    const legend = this.plot?.root.querySelector(".u-legend")?.offsetHeight || 40;
    return { width: Math.max(260, window.innerWidth - 2 * FULL_PAD), height: Math.max(200, window.innerHeight - cap - legend - 3 * FULL_PAD) };
  }

  setFull(on) {
    if (on === this.full) return;
    if (on) for (const c of this.board.charts) c.setFull(false);
    this.full = on;
    this.wrap.classList.toggle("chart-fullscreen", on);
    document.body.classList.toggle("chart-full-open", on);
    if (on) { this.wrap.setAttribute("role", "dialog"); this.wrap.setAttribute("aria-modal", "true"); }
    else { this.wrap.removeAttribute("role"); this.wrap.removeAttribute("aria-modal"); }
    this.wrap.setAttribute("aria-label", this.keys.join(", "));
    this.fullBtn.textContent = on ? t("charts.fullscreen_exit") : t("charts.fullscreen");
    this.plot?.setSize(this.size());
    if (on) this.fullBtn.focus();
  }

  png() {
    const src = this.plot.ctx.canvas;
    const pad = 28;
    const c = el("canvas", { width: src.width, height: src.height + pad });
    const g = c.getContext("2d");
    g.fillStyle = "#fff";
    g.fillRect(0, 0, c.width, c.height);
    g.fillStyle = "#222";
    g.font = `${Math.round(14 * (src.width / this.plot.width))}px sans-serif`;
    g.fillText(`${this.keys.join(" + ")} — ${this.board.sources.map((s) => s.label).join(", ")}`, 8, pad - 8);
    g.drawImage(src, 0, pad);
    download(`${safeName(this.keys.join("+"))}.png`, c.toDataURL("image/png"));
  }

  csv() { downloadText(`${safeName(this.keys.join("+"))}.csv`, metricsCsv(this.board.sources, this.keys), "text/csv"); }

  destroy() {
    if (this.full) this.setFull(false);
    this.plot?.destroy();
    this.wrap.remove();
  }
}

let boards = 0;

// The charts of one page: toolbar, key picker, a chart per entry of the view's `charts` (each a list
// of keys). `scope`: "task" or "compare" (each remembers its own view); `tab`: the hash's first word.
export class Board {
  constructor({ scope, tab = "", tools, picker, box }) {
    this.scope = scope;
    this.tab = tab;
    this.box = box;
    this.view = loadView(scope);
    this.sources = [];
    this.keys = [];
    this.units = {};
    this.charts = [];
    this.syncKey = `argus-${scope}-${boards++}`; // every chart of this board shares one cursor
    this.defaulted = this.view.charts.length > 0;
    this.shape = this.shapeOf();
    renderControls(tools, this.view, { onChange: () => this.changed(), onCsv: () => this.csvAll() });
    this.picker = new KeyPicker(picker, this.view, (k, on) => this.toggle(k, on));
    new ResizeObserver(() => this.resize()).observe(box);
    addEventListener("resize", () => this.resize());
    document.addEventListener("keydown", (e) => {
      if (e.key === "Escape") for (const c of this.charts) if (c.full) { c.setFull(false); e.preventDefault(); }
    });
  }

  // As many columns of charts as fit at ≥ 420 px (at most 3), sharing the box's width; 14 = padding + border.
  width() {
    const w = this.box.clientWidth || 640;
    const cols = Math.max(1, Math.min(3, Math.floor((w + 12) / 432)));
    return Math.max(260, Math.floor((w - 12 * (cols - 1)) / cols) - 14);
  }

  // sources: [{id, label, metrics}] (metrics as GET …/metrics returns it); keys: every key to offer.
  setSources(sources, keys) {
    this.sources = sources;
    this.keys = keys;
    this.units = Object.assign({}, ...sources.map((s) => s.metrics.units || {}));
    if (!this.defaulted && keys.length) {
      const chosen = [];
      for (const alternatives of PREFERRED) {
        const k = alternatives.map((re) => keys.find((key) => re.test(key) && !chosen.includes(key))).find(Boolean);
        if (k && chosen.length < MAX_DEFAULT) chosen.push(k);
      }
      this.view.charts = (chosen.length ? chosen : [keys[0]]).map((k) => [k]);
      this.defaulted = true;
      this.save();
    }
    this.picker.setKeys(keys);
    this.draw();
    this.hint();
  }

  // The view's charts that hold a key the runs have, in the view's order; the others wait for their keys.
  draw() {
    const live = this.view.charts.filter((ks) => ks.some((k) => this.keys.includes(k)));
    for (const c of this.charts) if (!live.includes(c.keys)) c.destroy();
    this.charts = live.map((ks) => this.charts.find((c) => c.keys === ks) || new Chart(this, ks));
    this.charts.forEach((c, i) => {
      if (this.box.children[i] !== c.wrap) this.box.insertBefore(c.wrap, this.box.children[i] || null);
      c.options(this.keys);
      c.update();
    });
  }

  // The query that asks the server for the drawn keys only (a verl run has ~100: all of them every 10 s
  // cost ~1 s of server time and MiBs per refresh, bench/charts_metrics.py); "" before any is chosen.
  query() {
    const keys = drawnKeys(this.view);
    return keys.length ? `?${keys.map((k) => `key=${encodeURIComponent(k)}`).join("&")}` : "";
  }

  // The picker: a key checked gets a chart of its own; unchecked, it leaves every chart it is on.
  toggle(key, on) {
    const drawn = drawnKeys(this.view).includes(key);
    if (on && !drawn) this.edit(() => this.view.charts.push([key]), key);
    if (!on && drawn) {
      this.edit(() => {
        for (const ks of this.view.charts) if (ks.includes(key)) ks.splice(ks.indexOf(key), 1);
        this.view.charts = this.view.charts.filter((ks) => ks.length);
      }, null);
    }
  }

  addKey(chart, key) { if (!chart.keys.includes(key)) this.edit(() => chart.keys.push(key), key); }

  dropKey(chart, key) {
    if (chart.keys.length < 2) return this.removeChart(chart);
    this.edit(() => chart.keys.splice(chart.keys.indexOf(key), 1), null);
  }

  removeChart(chart) { this.edit(() => { this.view.charts = this.view.charts.filter((ks) => ks !== chart.keys); }, null); }

  // A change of which keys are drawn where: redraw, tick the picker, remember; `added`, a key new to
  // the page, has no points yet: they are fetched.
  edit(change, added) {
    change();
    for (const c of this.charts) if (this.view.charts.includes(c.keys)) c.caption();
    this.draw();
    this.picker.sync();
    this.save();
    if (added) this.addPoints(added).catch((e) => console.warn(e));
  }

  // Only the added key's points are asked for (a request costs the server per key it returns:
  // bench/charts_metrics.py, bench/web_charts.py) and merged into each run's metrics; the next poll
  // brings everything anyway. `fetchKey(sourceId, query)` is the page's GET …/metrics.
  async addPoints(key) {
    const sources = this.sources;
    const got = await Promise.allSettled(sources.map((s) => this.fetchKey(s.id, `?key=${encodeURIComponent(key)}`)));
    if (sources !== this.sources) return; // a poll replaced them meanwhile: it asked for this key too
    got.forEach((r, i) => {
      if (r.status !== "fulfilled") return;
      const m = sources[i].metrics;
      m.points[key] = r.value.points[key] || [];
      m.times = { ...r.value.times, ...m.times };
    });
    this.draw();
  }

  // What needs a new uPlot (axis kind, scale, whether raw lines show); the smoothing weight alone does not.
  shapeOf() { return `${this.view.x}|${this.view.log}|${this.view.smooth > 0}`; }

  // A setting changed: moving the slider only recomputes the lines (zoom kept); a new x axis drops the
  // zoom (its range meant steps, not seconds); log scale or raw lines on/off rebuild the charts.
  changed() {
    const shape = this.shapeOf();
    const newX = shape.split("|")[0] !== this.shape.split("|")[0];
    this.shape = shape;
    for (const c of this.charts) {
      if (newX) c.zoom = null;
      c.update();
    }
    this.hint();
    this.save();
  }

  resize() {
    for (const c of this.charts) {
      if (!c.plot) continue;
      const { width, height } = c.size();
      if (c.plot.width !== width || c.plot.height !== height) c.plot.setSize({ width, height });
    }
  }

  // A time axis over runs logged without the driver's clock has nothing to show: say so.
  hint() {
    const none = this.view.x !== "step" && this.sources.some((s) => !Object.keys(s.metrics.times || {}).length);
    document.getElementById("chart-hint").textContent = none ? t("charts.no_times") : "";
  }

  save() { saveView(this.scope, this.view, this.tab); }

  csvAll() { downloadText(`metrics-${this.sources.map((s) => s.id).join("-")}.csv`, metricsCsv(this.sources, drawnKeys(this.view)), "text/csv"); }
}

// The task page's Metrics tab. A link with `#metrics&keys=…` opens that tab (task.js owns the tabs: it
// has attached its listeners by the time this timer runs).
if (location.hash.startsWith("#metrics")) {
  setTimeout(() => document.querySelector('#tabs [data-tab="metrics"]')?.click());
}

export function startCharts(base, finished) {
  const board = new Board({ scope: "task", tab: "metrics", tools: document.getElementById("chart-tools"),
    picker: document.getElementById("chart-picker"), box: document.getElementById("charts") });
  const id = base.split("/").pop();
  startCompareLink([decodeURIComponent(id)]);
  async function refresh() {
    const data = await api(`${base}/metrics${board.query()}`);
    document.getElementById("metrics-empty").hidden = data.keys.length > 0;
    document.getElementById("metric-state").textContent =
      data.last_step === null ? "" : t("task.metric_last_step", { step: data.last_step });
    board.setSources([{ id: decodeURIComponent(id), label: decodeURIComponent(id), metrics: data }], data.keys);
    if (finished()) poller.stop();
  }
  const poller = poll(refresh, 10000);
  poller.now();
  if (board.view.charts.length) board.save();
  const now = () => refresh().catch((e) => console.warn(e));
  board.box._refresh = now; // tests force a refresh instead of waiting 10 s
  board.fetchKey = (_, query) => api(`${base}/metrics${query}`); // a key added: its points only (also once polling stopped)
  return Object.assign(poller, { board });
}
