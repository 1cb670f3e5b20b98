// The task page's "Re-run in another environment" (issue 35), under the Spec tab: Preview asks the API
// (POST …/rerun?dry_run=true) for the spec it would submit — env: set, the keys that environment's verl reads
// under another name moved — and shows its diff and what no fix covers; Submit re-run posts it and links the
// new task. Which keys move, and whether a re-run is allowed, is the API's to say: this only shows its answer.
import { api, el, sayResult, t } from "./common.js";
import { errorMessage, fieldMessage, warningTexts } from "./messages.js";

export function startRerun(base) {
  const envSelect = document.getElementById("rerun-env");
  const previewBtn = document.getElementById("rerun-preview");
  const submitBtn = document.getElementById("rerun-submit");
  const diff = document.getElementById("rerun-diff");
  const problems = document.getElementById("rerun-problems");
  const warnings = document.getElementById("rerun-warnings");
  const result = document.getElementById("rerun-result");
  let loaded = false;

  const say = (ok, text, link) => sayResult(result, ok, text, link);

  async function preview() {
    result.hidden = true;
    submitBtn.hidden = true;
    try {
      const plan = await api(`${base}/rerun?dry_run=true`, { method: "POST", body: { env: envSelect.value } });
      diff.hidden = false;
      diff.textContent = plan.diff || t("task.rerun_no_change");
      problems.replaceChildren(...plan.errors.map((e) => el("li", { "data-field": e.field },
        el("span", { class: "mono" }, e.field), ": ", fieldMessage(e))));
      problems.hidden = plan.errors.length === 0;
      const warned = warningTexts(plan);
      warnings.replaceChildren(...warned.map((w) => el("li", {}, w)));
      warnings.hidden = warned.length === 0;
      submitBtn.hidden = plan.errors.length > 0;
      if (plan.errors.length) say(false, t("task.rerun_problems", { n: plan.errors.length }));
    } catch (e) {
      say(false, errorMessage(e));
    }
  }

  async function submit() {
    try {
      const r = await api(`${base}/rerun`, { method: "POST", body: { env: envSelect.value } });
      submitBtn.hidden = true;
      say(true, t("task.rerun_submitted"),
        el("a", { href: `/tasks/${encodeURIComponent(r.task_id)}`, class: "mono", "data-new-task": r.task_id }, r.task_id));
    } catch (e) {
      say(false, errorMessage(e));
    }
  }

  previewBtn.addEventListener("click", preview);
  submitBtn.addEventListener("click", submit);
  return {
    /** Fill the environment list once, the task's own environment first. */
    async open(current) {
      if (loaded) return;
      loaded = true;
      const envs = await api("/api/v2/envs");
      const names = envs.environments.map((e) => e.name);
      const first = current && names.includes(current) ? current : envs.default;
      envSelect.replaceChildren(...[first, ...names.filter((n) => n !== first)].map((n) => {
        const env = envs.environments.find((e) => e.name === n);
        return el("option", { value: n }, env && env.verl ? `${n} (verl ${env.verl})` : n);
      }));
    },
  };
}
