// Metric charts of one task: GET …/metrics (verl's `step:N - key:value` lines, parsed by the server),
// one uPlot chart per chosen key, refreshed every 10 s while the task runs and the tab is visible.
import { uPlot } from "/static/vendor/charts.js";
import { api, el, poll, t } from "./common.js";

// Shown first when present: reward/score, KL, entropy, response length, throughput, loss.
const PREFERRED = [/reward|score/, /kl/, /entropy/, /response_length\/mean/, /throughput/, /loss/];
const MAX_DEFAULT = 4;

export function startCharts(base, finished) {
  const box = document.getElementById("charts");
  const select = document.getElementById("metric-key");
  const chosen = [];
  const plots = new Map();
  let data = null;

  function values(key) {
    const pts = (data.points[key] || []).filter((p) => typeof p[1] === "number");
    return [pts.map((p) => p[0]), pts.map((p) => p[1])];
  }

  function draw(key) {
    const series = values(key);
    let plot = plots.get(key);
    if (plot) { plot.setData(series); plot.root.parentElement.dataset.points = String(series[0].length); return; }
    const wrap = el("figure", { class: "chart", "data-key": key, "data-points": series[0].length },
      el("figcaption", {}, key, " ", el("button", { type: "button", class: "link", onclick: () => remove(key) }, "×")));
    box.append(wrap);
    plot = new uPlot({
      width: Math.min(560, box.clientWidth || 560), height: 220,
      scales: { x: { time: false } },
      axes: [{ label: t("task.step") }, {}],
      series: [{ label: t("task.step") }, { label: key, stroke: "#2b6cb0", width: 2, points: { show: series[0].length < 60 } }],
    }, series, wrap);
    plots.set(key, plot);
  }

  function remove(key) {
    const plot = plots.get(key);
    if (plot) { plot.root.parentElement.remove(); plot.destroy(); plots.delete(key); }
    chosen.splice(chosen.indexOf(key), 1);
  }

  async function refresh() {
    data = await api(`${base}/metrics`);
    document.getElementById("metrics-empty").hidden = data.keys.length > 0;
    document.getElementById("metric-state").textContent =
      data.last_step === null ? "" : t("task.metric_last_step", { step: data.last_step });
    if (select.options.length !== data.keys.length) {
      select.replaceChildren(...data.keys.map((k) => el("option", { value: k }, k)));
    }
    if (!chosen.length) {
      for (const re of PREFERRED) {
        const k = data.keys.find((key) => re.test(key) && !chosen.includes(key));
        if (k && chosen.length < MAX_DEFAULT) chosen.push(k);
      }
      if (!chosen.length && data.keys.length) chosen.push(data.keys[0]);
    }
    for (const k of chosen) draw(k);
    if (finished()) poller.stop();
  }

  document.getElementById("metric-add").addEventListener("click", () => {
    const k = select.value;
    if (k && !chosen.includes(k)) { chosen.push(k); draw(k); }
  });
  const poller = poll(refresh, 10000);
  poller.now();
  return poller;
}
