// Sweeps (issue 38): GET /api/v2/sweeps (the list) or GET /api/v2/sweeps/{id} (one sweep: every trial's metric
// on one uPlot chart, x = step, one line per trial, the best trial drawn bold; the trials' table with their
// parameters, status and why a trial was stopped; Cancel → POST …/cancel). What the sweep is and does is the
// API's to say: the status, the best trial and every message are shown as it answers them. Refreshed every
// 5 s while the sweep runs.
import { uPlot } from "../vendor/charts.js";
import { COLORS } from "./charts.js";
import { api, confirmDialog, el, fmtTime, page, poll, sayResult, statusBadge, t } from "./common.js";
import { errorMessage, sayMessage, statusMessage } from "./messages.js";

const errorBox = document.getElementById("sweeps-error");
const taskLink = (id) => el("a", { href: `/tasks/${encodeURIComponent(id)}`, class: "mono" }, id);
const params = (p) => Object.entries(p).map(([k, v]) => `${k}=${v}`).join(", ");

function fail(e) {
  errorBox.textContent = errorMessage(e);
  errorBox.hidden = false;
}

function trialCounts(s) {
  const n = {};
  for (const tr of s.trials) n[tr.status] = (n[tr.status] || 0) + 1;
  return Object.entries(n).map(([k, v]) => `${v} ${t("status." + k).toLowerCase()}`).join(", ");
}

function hours(s) {
  const used = s.hours_used.toPrecision(3);
  return s.budget_gpu_hours ? t("sweeps.hours", { used, budget: s.budget_gpu_hours }) : used;
}

async function loadList() {
  try {
    const all = await api("/api/v2/sweeps");
    errorBox.hidden = true;
    document.getElementById("sweeps-body").replaceChildren(...all.map((s) => el("tr", { "data-sweep": s.sweep_id },
      el("td", {}, el("a", { href: `/sweeps/${encodeURIComponent(s.sweep_id)}`, class: "mono" }, s.sweep_id)),
      el("td", {}, s.name), el("td", {}, statusBadge(s.status)), el("td", {}, trialCounts(s)),
      el("td", { class: "num" }, hours(s)), el("td", {}, s.best_task ? taskLink(s.best_task) : "—"),
      el("td", {}, fmtTime(s.created_at)))));
    document.getElementById("sweeps-empty").hidden = all.length > 0;
  } catch (e) { fail(e); }
}

let plot = null;
const CHART_HEIGHT = 260;

/** The chart's width: the box's content width, never more than the viewport leaves it (a phone: 390 px). Read
 * from the layout, not the chart, so a chart drawn wide never widens the page it is then measured in. */
function chartWidth(box) {
  const pad = 12; // .chart's padding, both sides (clientWidth has it, not the border)
  const room = document.documentElement.clientWidth - Math.max(0, box.getBoundingClientRect().left) - pad - 2;
  return Math.max(200, Math.floor(Math.min((box.clientWidth || 720) - pad, room)));
}

function fitChart() {
  const box = document.getElementById("sweep-chart");
  if (!plot || box.hidden) return;
  const width = chartWidth(box);
  if (Math.abs(plot.width - width) > 1) plot.setSize({ width, height: CHART_HEIGHT });
}
new ResizeObserver(fitChart).observe(document.getElementById("sweep-chart"));
addEventListener("resize", fitChart);

function drawChart(s) {
  const box = document.getElementById("sweep-chart");
  const withValues = s.trials.filter((tr) => tr.metric.length);
  document.getElementById("sweep-chart-empty").hidden = withValues.length > 0;
  box.hidden = withValues.length === 0;
  if (!withValues.length) return;
  const steps = [...new Set(withValues.flatMap((tr) => tr.metric.map(([st]) => st)))].sort((a, b) => a - b);
  const data = [steps, ...withValues.map((tr) => {
    const by = new Map(tr.metric.map(([st, v]) => [st, typeof v === "number" ? v : null]));
    return steps.map((st) => (by.has(st) ? by.get(st) : null));
  })];
  const series = [{ label: "step" }, ...withValues.map((tr, i) => ({
    label: `#${tr.trial} ${params(tr.params)}`, stroke: COLORS[i % COLORS.length],
    width: tr.task_id === s.best_task ? 3 : 1.25, spanGaps: true, points: { show: true, size: 5 } }))];
  const opts = { width: chartWidth(box), height: CHART_HEIGHT, series,
    scales: { x: { time: false } }, axes: [{ label: "step" }, { label: s.metric }] };
  if (plot) plot.destroy();
  box.replaceChildren();
  plot = new uPlot(opts, data, box);
  box.dataset.lines = String(withValues.length);
}

async function loadOne(id, poller) {
  let s;
  try {
    s = await api(`/api/v2/sweeps/${encodeURIComponent(id)}`);
    errorBox.hidden = true;
  } catch (e) { fail(e); return; }
  document.getElementById("sweep-title").textContent = `${s.name} (${s.sweep_id})`;
  document.getElementById("sweep-status").replaceChildren(statusBadge(s.status), " ", hours(s));
  const early = s.early_stop ? `rungs ${s.early_stop.rungs.join(", ")} · keep ${s.early_stop.keep}` : t("sweeps.no_early");
  document.getElementById("sweep-metric").textContent = s.metric ? t("sweeps.metric", { metric: s.metric, mode: s.mode,
    early }) : "";
  const msg = document.getElementById("sweep-message");
  msg.textContent = sayMessage(s.message_code, s.message_params, s.message);
  msg.hidden = !s.message;
  document.getElementById("trials-metric-head").textContent = s.metric ? t("sweeps.col_metric", { metric: s.metric }) : "";
  document.getElementById("trials-body").replaceChildren(...s.trials.map((tr) => {
    const last = tr.metric.length ? tr.metric[tr.metric.length - 1] : null;
    return el("tr", { "data-trial": tr.trial, "data-task": tr.task_id, "data-best": tr.task_id === s.best_task ? "1" : "0",
      "data-stopped": tr.termination_reason === "SWEEP_STOPPED" ? "1" : "0" },
      el("td", { class: "mono" }, String(tr.trial)),
      el("td", {}, taskLink(tr.task_id), tr.task_id === s.best_task ? el("span", { class: "badge default-badge" }, t("sweeps.best")) : null),
      el("td", {}, statusBadge(tr.status)),
      el("td", { class: "mono" }, params(tr.params)),
      el("td", { class: "num" }, last ? `${typeof last[1] === "number" ? last[1].toPrecision(4) : last[1]} @${last[0]}` : "—"),
      el("td", { class: "hint" }, tr.termination_reason === "SWEEP_STOPPED" ? statusMessage(tr) : ""));
  }));
  drawChart(s);
  const cancel = document.getElementById("sweep-cancel");
  cancel.hidden = s.status !== "RUNNING";
  cancel.onclick = async () => {
    if (!(await confirmDialog(t("sweeps.cancel_confirm", { id: s.sweep_id }), { danger: true }))) return;
    const result = document.getElementById("sweep-result");
    try {
      await api(`/api/v2/sweeps/${encodeURIComponent(s.sweep_id)}/cancel`, { method: "POST" });
      sayResult(result, true, t("sweeps.canceled"));
    } catch (e) { sayResult(result, false, errorMessage(e)); }
    loadOne(id, poller);
  };
  document.getElementById("sweep-one").dataset.loaded = "1";
  if (s.status !== "RUNNING" && poller.p) poller.p.stop();
}

if (page.sweep_id) {
  const poller = {};
  poller.p = poll(() => loadOne(page.sweep_id, poller), 5000);
  poller.p.now();
} else {
  poll(loadList, 10000).now();
}
