// Pipelines (issue 38): GET /api/v2/pipelines (the list) or GET /api/v2/pipelines/{id} (its steps: what each does,
// what it needs, its status, its task, and the API's note — why it failed or was skipped, how its gate was passed,
// or what it left), Cancel → POST …/cancel. Every state and message is the API's; refreshed every 5 s while it runs.
import { api, confirmDialog, el, fmtTime, page, poll, sayResult, statusBadge, t } from "./common.js";
import { errorMessage, sayMessage } from "./messages.js";

const errorBox = document.getElementById("pipelines-error");
const taskLink = (id) => el("a", { href: `/tasks/${encodeURIComponent(id)}`, class: "mono" }, id);

function fail(e) {
  errorBox.textContent = errorMessage(e);
  errorBox.hidden = false;
}

function note(s) {
  if (s.message) return sayMessage(s.message_code, s.message_params, s.message);
  if (s.gate) return sayMessage(s.gate_code, s.gate_params, s.gate);
  return Object.entries(s.artifacts || {}).filter(([k]) => k !== "scores").map(([k, v]) => `${k}: ${v}`).join(" · ");
}

async function loadList() {
  try {
    const all = await api("/api/v2/pipelines");
    errorBox.hidden = true;
    document.getElementById("pipelines-body").replaceChildren(...all.map((p) => el("tr", { "data-pipeline": p.pipeline_id },
      el("td", {}, el("a", { href: `/pipelines/${encodeURIComponent(p.pipeline_id)}`, class: "mono" }, p.pipeline_id)),
      el("td", {}, p.name), el("td", {}, statusBadge(p.status)),
      el("td", { class: "mono" }, p.steps.map((s) => `${s.name}: ${s.status}`).join(" → ")),
      el("td", {}, fmtTime(p.created_at)))));
    document.getElementById("pipelines-empty").hidden = all.length > 0;
  } catch (e) { fail(e); }
}

async function loadOne(id, poller) {
  let p;
  try {
    p = await api(`/api/v2/pipelines/${encodeURIComponent(id)}`);
    errorBox.hidden = true;
  } catch (e) { fail(e); return; }
  document.getElementById("pipeline-title").textContent = `${p.name} (${p.pipeline_id})`;
  document.getElementById("pipeline-status").replaceChildren(statusBadge(p.status));
  const msg = document.getElementById("pipeline-message");
  msg.textContent = sayMessage(p.message_code, p.message_params, p.message);
  msg.hidden = !p.message;
  document.getElementById("steps-body").replaceChildren(...p.steps.map((s) => el("tr", { "data-step": s.name,
    "data-status": s.status },
    el("td", { class: "mono" }, s.name), el("td", {}, s.action), el("td", { class: "mono" }, s.needs.join(", ")),
    el("td", {}, el("span", { class: `badge step-${s.status}` }, s.status)),
    el("td", {}, s.task_id ? taskLink(s.task_id) : "—", s.tries > 1 ? ` ×${s.tries}` : ""),
    el("td", { class: "hint" }, note(s)))));
  const cancel = document.getElementById("pipeline-cancel");
  cancel.hidden = p.status !== "RUNNING";
  cancel.onclick = async () => {
    if (!(await confirmDialog(t("pipelines.cancel_confirm", { id: p.pipeline_id }), { danger: true }))) return;
    const result = document.getElementById("pipeline-result");
    try {
      await api(`/api/v2/pipelines/${encodeURIComponent(p.pipeline_id)}/cancel`, { method: "POST" });
      sayResult(result, true, t("pipelines.canceled"));
    } catch (e) { sayResult(result, false, errorMessage(e)); }
    loadOne(id, poller);
  };
  document.getElementById("pipeline-one").dataset.loaded = "1";
  if (p.status !== "RUNNING" && poller.p) poller.p.stop();
}

if (page.pipeline_id) {
  const poller = {};
  poller.p = poll(() => loadOne(page.pipeline_id, poller), 5000);
  poller.p.now();
} else {
  poll(loadList, 10000).now();
}
