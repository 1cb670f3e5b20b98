// Metric charts: uPlot, bundled by scripts/build-web.sh into src/argus/web/static/vendor/charts.js.
import uPlot from "uplot";
export { uPlot };
