// The chart view's settings and its key picker, shared by the task page and the Compare page.
//
// A verl PPO run logs ~100 keys (actor/…, critic/…, perf/…, timing_s/…), so a plain <select> is
// unusable: the picker is a search box over every key, grouped by the key's first `/` segment.
// The view (the charts — each a list of keys drawn together —, smoothing, x axis, log scale) is
// remembered per user in localStorage and written to the URL hash (`keys=a|b,c`: a chart of a and b,
// and one of c; a link from before charts held several keys, `keys=a,c`, reads the same), so reload
// keeps it and a copied link shows the same view; the hash wins over what was remembered (it is what
// the sender saw).
import { el, page, t } from "./common.js";

export const X_MODES = ["step", "wall", "rel"];
export function xLabel(mode) { return mode === "wall" ? t("charts.x_wall") : mode === "rel" ? t("charts.x_rel") : t("task.step"); }
const DEFAULTS = { charts: [], smooth: 0.6, x: "step", log: false };

function storageKey(scope) { return `argus.charts.${scope}.${page.user || ""}`; }

function fromHash() {
  const h = new URLSearchParams(location.hash.slice(1));
  const out = {};
  if (h.has("keys")) out.charts = h.get("keys").split(",").map((c) => c.split("|"));
  if (h.has("smooth")) {
    const s = Number(h.get("smooth"));
    if (Number.isFinite(s) && s >= 0 && s < 1) out.smooth = s;
  }
  if (X_MODES.includes(h.get("x"))) out.x = h.get("x");
  if (h.has("log")) out.log = h.get("log") === "1";
  return out;
}

// `scope` separates the task page's view from the Compare page's ("task" / "compare").
export function loadView(scope) {
  let kept = {};
  try { kept = JSON.parse(localStorage.getItem(storageKey(scope)) || "{}") || {}; } catch { kept = {}; }
  if (!Array.isArray(kept.charts) && Array.isArray(kept.keys)) kept.charts = kept.keys.map((k) => [k]); // kept before
  const view = { ...DEFAULTS, ...kept, ...fromHash() };
  delete view.keys;
  view.charts = cleanCharts(view.charts);
  return view;
}

// Each chart a list of distinct non-empty keys; an empty chart is dropped.
function cleanCharts(charts) {
  if (!Array.isArray(charts)) return [];
  return charts.filter(Array.isArray)
    .map((c) => c.filter((k, i) => typeof k === "string" && k && c.indexOf(k) === i))
    .filter((c) => c.length);
}

// Every key drawn on some chart, once.
export function drawnKeys(view) { return [...new Set(view.charts.flat())]; }

// `tab`: a first hash word (the task page opens its Metrics tab for "#metrics&…").
export function saveView(scope, view, tab) {
  try { localStorage.setItem(storageKey(scope), JSON.stringify(view)); } catch { /* storage may be off */ }
  const h = new URLSearchParams();
  h.set("keys", view.charts.map((c) => c.join("|")).join(","));
  h.set("smooth", String(view.smooth));
  h.set("x", view.x);
  h.set("log", view.log ? "1" : "0");
  const hash = `#${tab ? `${tab}&` : ""}${h.toString().replaceAll("%2F", "/").replaceAll("%2C", ",").replaceAll("%7C", "|")}`;
  history.replaceState(null, "", location.pathname + location.search + hash);
}

export function groupOf(key) {
  const i = key.indexOf("/");
  return i > 0 ? key.slice(0, i) : "";
}

// The toolbar: smoothing slider, x axis, log scale, CSV of every chart. `onChange()` after each edit.
export function renderControls(box, view, { onChange, onCsv }) {
  const value = el("output", { id: "chart-smooth-value" }, view.smooth.toFixed(2));
  const slider = el("input", { type: "range", id: "chart-smooth", min: "0", max: "0.99", step: "0.01",
    value: String(view.smooth), "aria-label": t("charts.smoothing") });
  slider.addEventListener("input", () => {
    view.smooth = Number(slider.value);
    value.textContent = view.smooth.toFixed(2);
    onChange();
  });
  const xsel = el("select", { id: "chart-x" }, ...X_MODES.map((m) => el("option", { value: m }, xLabel(m))));
  xsel.value = view.x;
  xsel.addEventListener("change", () => { view.x = xsel.value; onChange(); });
  const log = el("input", { type: "checkbox", id: "chart-log" });
  log.checked = view.log;
  log.addEventListener("change", () => { view.log = log.checked; onChange(); });
  const csv = el("button", { type: "button", id: "chart-csv", onclick: onCsv }, t("charts.csv_all"));
  box.replaceChildren(
    el("label", { class: "charts-smooth" }, t("charts.smoothing"), " ", slider, " ", value),
    el("label", {}, t("charts.x_axis"), " ", xsel),
    el("label", {}, log, " ", t("charts.log_scale")),
    csv,
    el("span", { class: "muted", id: "chart-hint" }));
}

// The key picker: search box + keys grouped by prefix, a checkbox each. Re-rendered when keys change;
// the search text and which groups are folded survive that.
export class KeyPicker {
  constructor(box, view, onToggle) {
    this.box = box;
    this.view = view;
    this.onToggle = onToggle;
    this.keys = [];
    this.folded = new Set();
    this.search = el("input", { type: "search", id: "chart-search", autocomplete: "off",
      placeholder: t("charts.search"), "aria-label": t("charts.search") });
    this.search.addEventListener("input", () => this.filter());
    this.count = el("span", { class: "muted", id: "chart-search-count" });
    this.list = el("div", { class: "charts-groups", id: "chart-keys" });
    box.replaceChildren(el("div", { class: "charts-search" }, this.search, " ", this.count), this.list);
  }

  setKeys(keys) {
    if (keys.length === this.keys.length && keys.every((k, i) => k === this.keys[i])) return this.sync();
    this.keys = keys;
    const groups = new Map();
    for (const k of keys) {
      const g = groupOf(k);
      if (!groups.has(g)) groups.set(g, []);
      groups.get(g).push(k);
    }
    const names = [...groups.keys()].sort((a, b) => (a === "") - (b === "") || a.localeCompare(b));
    this.list.replaceChildren(...names.map((g) => {
      const details = el("details", { class: "charts-group", "data-group": g },
        el("summary", {}, g ? `${g}/` : t("charts.ungrouped"), " ", el("span", { class: "muted" }, `(${groups.get(g).length})`)),
        ...groups.get(g).map((k) => {
          const box = el("input", { type: "checkbox", value: k });
          box.addEventListener("change", () => this.onToggle(k, box.checked));
          return el("label", { class: "charts-key", "data-key": k, title: k }, box, " ", g ? k.slice(g.length + 1) : k);
        }));
      details.open = !this.folded.has(g);
      details.addEventListener("toggle", () => { if (details.open) this.folded.delete(g); else this.folded.add(g); });
      return details;
    }));
    this.sync();
    this.filter();
  }

  sync() {
    const drawn = new Set(drawnKeys(this.view));
    for (const box of this.list.querySelectorAll("input[type=checkbox]")) box.checked = drawn.has(box.value);
  }

  // Every space-separated word must occur in the key (case-insensitive); groups with no match hide.
  filter() {
    const words = this.search.value.toLowerCase().split(/\s+/).filter(Boolean);
    let shown = 0;
    for (const g of this.list.querySelectorAll(".charts-group")) {
      let any = false;
      for (const label of g.querySelectorAll(".charts-key")) {
        const key = label.dataset.key.toLowerCase();
        const ok = words.every((w) => key.includes(w));
        label.hidden = !ok;
        if (ok) { any = true; shown += 1; }
      }
      g.hidden = !any;
      if (words.length && any) g.open = true;
    }
    this.count.textContent = t("charts.search_count", { shown, total: this.keys.length });
  }
}
