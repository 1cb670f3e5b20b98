// What a task used (issue 24): GET …/resources (its driver's 15 s samples of the task's own processes and
// GPUs, bucketed by the server) as uPlot charts — CPUs busy, memory, and per-GPU utilisation where there
// are GPUs — with the server's summary line; refreshed every 15 s while the task runs and the tab is open.
import { uPlot } from "../vendor/charts.js";
import { api, el, poll, t } from "./common.js";

const COLORS = ["#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b83280", "#2c7a7b", "#975a16", "#4a5568"];

export function startResources(base, finished) {
  const box = document.getElementById("res-charts");
  const plots = new Map();

  function draw(name, label, series, labels) {
    const data = [series[0], ...series.slice(1)];
    let plot = plots.get(name);
    if (plot) { plot.setData(data); plot.root.parentElement.dataset.points = String(data[0].length); return; }
    const wrap = el("figure", { class: "chart", "data-key": name, "data-points": data[0].length }, el("figcaption", {}, label));
    box.append(wrap);
    plot = new uPlot({
      width: Math.min(560, box.clientWidth || 560), height: 200,
      series: [{}, ...labels.map((l, i) => ({ label: l, stroke: COLORS[i % COLORS.length], width: 2 }))],
    }, data, wrap);
    plots.set(name, plot);
  }

  async function refresh() {
    const r = await api(`${base}/resources`);
    const s = r.samples;
    document.getElementById("res-empty").hidden = s.length > 0;
    document.getElementById("res-summary").textContent = s.length ? t("task.res_summary", {
      samples: r.summary.samples, cpu: r.summary.cpu_mean ?? "–", mem: ((r.summary.rss_max || 0) / 2 ** 30).toFixed(1),
    }) : "";
    document.getElementById("res-idle").hidden = !r.summary.idle_since;
    if (!s.length) return;
    const x = s.map((p) => p.t);
    draw("cpu", t("task.res_cpu"), [x, s.map((p) => p.cpu)], [t("task.res_cpu")]);
    draw("rss", t("task.res_memory"), [x, s.map((p) => (p.rss || 0) / 2 ** 30)], [t("task.res_memory")]);
    const gpus = Math.max(0, ...s.map((p) => (p.gpu || []).length));
    if (gpus) {
      const util = [...Array(gpus).keys()].map((i) => s.map((p) => (p.gpu && p.gpu[i] ? p.gpu[i][0] : null)));
      draw("gpu", t("task.res_gpu_util"), [x, ...util], [...Array(gpus).keys()].map((i) => `GPU ${i}`));
    }
    if (finished()) poller.stop();
  }

  const poller = poll(refresh, 15000);
  poller.now();
  return poller;
}
