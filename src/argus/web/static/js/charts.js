// Metric charts: GET …/metrics (verl's `step:N - key:value` lines, parsed by the server; `times` from the
// driver's clock), one uPlot chart per chosen key with one line per source (a task; the Compare page
// passes several). RL curves are noisy, so each source is drawn raw (faint) and smoothed with
// TensorBoard's debiased EMA. A drag zooms (x), a double-click resets; the zoom survives the periodic
// refresh because new data is set inside one uPlot batch that puts the zoomed x range back. Width
// follows the window (ResizeObserver). The task page refreshes every 10 s while the task runs.
import { uPlot } from "../vendor/charts.js";
import { api, el, fmtDuration, poll, t } from "./common.js";
import { KeyPicker, loadView, renderControls, saveView, xLabel } from "./chart_picker.js";
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
  const t0 = Math.min(...Object.values(times));
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

// One chart: a key over every source. Keeps its zoom (x range) across new data and rebuilds.
class Chart {
  constructor(board, key) {
    this.board = board;
    this.key = key;
    this.zoom = null;
    this.plot = null;
    this.updating = false;
    const bar = el("span", { class: "charts-actions" },
      el("button", { type: "button", class: "link chart-png", onclick: () => this.png() }, "PNG"),
      el("button", { type: "button", class: "link chart-csv", onclick: () => this.csv() }, "CSV"),
      el("button", { type: "button", class: "link chart-remove", title: t("charts.remove"),
        onclick: () => board.toggle(key, false) }, "×"));
    this.wrap = el("figure", { class: "chart charts-chart", "data-key": key, "data-points": "0" },
      el("figcaption", {}, el("span", { class: "mono" }, key), bar));
    this.wrap._chart = this; // for tests and the console: the uPlot instance is this.plot
  }

  data() {
    const { sources, view } = this.board;
    const w = view.smooth;
    const tables = sources.map((s) => {
      const [xs, ys] = xy(s.metrics, this.key, view.x, view.log);
      return [xs, ys, ema(ys, w)];
    });
    const points = tables.reduce((n, tb) => n + tb[0].length, 0);
    this.wrap.dataset.points = String(points);
    if (tables.length === 1) return tables[0];
    return uPlot.join(tables, tables.map(() => [RETAIN, RETAIN, RETAIN]));
  }

  opts(width) {
    const { sources, view } = this.board;
    const series = [{ label: xLabel(view.x),
      value: (u, v) => (v === null || v === undefined ? "—" : view.x === "wall" ? new Date(v * 1000).toLocaleString()
        : view.x === "rel" ? fmtDuration(v) : String(v)) }];
    sources.forEach((s, i) => {
      const color = COLORS[i % COLORS.length];
      const label = sources.length > 1 ? s.label : this.key;
      series.push({ label: `${label} (${t("charts.raw")})`, stroke: `${color}40`, width: 1,
        show: view.smooth > 0, points: { show: false } });
      series.push({ label, stroke: color, width: 2, points: { show: (s.metrics.points[this.key] || []).length < 60 } });
    });
    return {
      width, height: HEIGHT,
      scales: { x: { time: view.x === "wall" }, y: { distr: view.log ? 3 : 1 } },
      axes: [{ label: xLabel(view.x),
        values: view.x === "rel" ? (u, splits) => splits.map((v) => fmtDuration(v)) : undefined }, {}],
      series,
      cursor: { drag: { x: true, y: false } },
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

  build(width) {
    this.updating = true;
    if (this.plot) this.plot.destroy();
    this.plot = new uPlot(this.opts(width), this.data(), this.wrap);
    for (const [i, row] of [...this.plot.root.querySelectorAll(".u-legend .u-series")].entries()) {
      if (i > 0 && i % 2 === 1) row.hidden = true; // the raw lines' legend: same names, faint
    }
    this.plot.over.addEventListener("dblclick", () => { this.zoom = null; });
    if (this.zoom) this.plot.setScale("x", this.zoom);
    this.updating = false;
  }

  update() {
    this.updating = true;
    this.plot.batch(() => {
      this.plot.setData(this.data());
      if (this.zoom) this.plot.setScale("x", this.zoom);
    });
    this.updating = false;
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
    g.fillText(`${this.key} — ${this.board.sources.map((s) => s.label).join(", ")}`, 8, pad - 8);
    g.drawImage(src, 0, pad);
    download(`${safeName(this.key)}.png`, c.toDataURL("image/png"));
  }

  csv() { downloadText(`${safeName(this.key)}.csv`, metricsCsv(this.board.sources, [this.key]), "text/csv"); }

  destroy() { this.plot?.destroy(); this.wrap.remove(); }
}

// The charts of one page: toolbar, key picker, a chart per chosen key. `scope`: "task" or "compare"
// (each remembers its own view); `tab`: the hash's first word.
export class Board {
  constructor({ scope, tab = "", tools, picker, box }) {
    this.scope = scope;
    this.tab = tab;
    this.box = box;
    this.view = loadView(scope);
    this.sources = [];
    this.charts = new Map();
    this.defaulted = this.view.keys.length > 0;
    this.shape = this.shapeOf();
    renderControls(tools, this.view, { onChange: () => this.changed(), onCsv: () => this.csvAll() });
    this.picker = new KeyPicker(picker, this.view, (k, on) => this.toggle(k, on));
    new ResizeObserver(() => this.resize()).observe(box);
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
    if (!this.defaulted && keys.length) {
      const chosen = [];
      for (const alternatives of PREFERRED) {
        const k = alternatives.map((re) => keys.find((key) => re.test(key) && !chosen.includes(key))).find(Boolean);
        if (k && chosen.length < MAX_DEFAULT) chosen.push(k);
      }
      this.view.keys = chosen.length ? chosen : [keys[0]];
      this.defaulted = true;
      this.save();
    }
    this.picker.setKeys(keys);
    const wanted = this.view.keys.filter((k) => keys.includes(k));
    for (const [k, c] of this.charts) if (!wanted.includes(k)) { c.destroy(); this.charts.delete(k); }
    for (const k of wanted) {
      const c = this.charts.get(k);
      if (c) c.update();
      else this.add(k);
    }
    this.hint();
  }

  add(key) {
    const c = new Chart(this, key);
    this.charts.set(key, c);
    this.box.append(c.wrap);
    c.build(this.width());
  }

  // The query that asks the server for the drawn keys only (a verl run has ~100: all of them every 10 s
  // cost ~1 s of server time and MiBs per refresh, bench/charts_metrics.py); "" before any is chosen.
  query() { return this.view.keys.length ? `?${this.view.keys.map((k) => `key=${encodeURIComponent(k)}`).join("&")}` : ""; }

  toggle(key, on) {
    const i = this.view.keys.indexOf(key);
    if (on && i < 0) { this.view.keys.push(key); this.add(key); this.onKeyAdded?.(); }
    if (!on && i >= 0) {
      this.view.keys.splice(i, 1);
      this.charts.get(key)?.destroy();
      this.charts.delete(key);
    }
    this.picker.sync();
    this.save();
  }

  // What needs a new uPlot (axis kind, scale, whether raw lines show); the smoothing weight alone does not.
  shapeOf() { return `${this.view.x}|${this.view.log}|${this.view.smooth > 0}`; }

  // A setting changed: moving the slider only recomputes the lines (zoom kept); a new x axis drops the
  // zoom (its range meant steps, not seconds); log scale or raw lines on/off rebuild the charts.
  changed() {
    const shape = this.shapeOf();
    const newX = shape.split("|")[0] !== this.shape.split("|")[0];
    for (const c of this.charts.values()) {
      if (newX) c.zoom = null;
      if (shape === this.shape) c.update();
      else c.build(this.width());
    }
    this.shape = shape;
    this.hint();
    this.save();
  }

  resize() {
    const w = this.width();
    for (const c of this.charts.values()) if (c.plot && c.plot.width !== w) c.plot.setSize({ width: w, height: HEIGHT });
  }

  // A time axis over runs logged without the driver's clock has nothing to show: say so.
  hint() {
    const none = this.view.x !== "step" && this.sources.some((s) => !Object.keys(s.metrics.times || {}).length);
    document.getElementById("chart-hint").textContent = none ? t("charts.no_times") : "";
  }

  save() { saveView(this.scope, this.view, this.tab); }

  csvAll() { downloadText(`metrics-${this.sources.map((s) => s.id).join("-")}.csv`, metricsCsv(this.sources, this.view.keys), "text/csv"); }
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
  if (board.view.keys.length) board.save();
  const now = () => refresh().catch((e) => console.warn(e));
  board.box._refresh = now; // tests force a refresh instead of waiting 10 s
  board.onKeyAdded = now; // its points were not asked for yet (also once the task has ended and polling stopped)
  return Object.assign(poller, { board });
}
