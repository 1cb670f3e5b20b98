// The task page's Checkpoints tab (issue 25): GET …/checkpoints (verl's global_step_N folders: state, size,
// time), and per complete step Resume (POST …/resume: a new task), Export to a Hugging Face folder
// (POST …/export: a CPU task), Evaluate (POST …/evaluate: verl's validation of the step, issue 38; the step's
// latest evaluation shows its core scores once it succeeded, else its task and status), lm-eval… (POST …/evaluate
// with an lm_eval block: EleutherAI lm-eval on the step, any run's, SFT's too; a small form whose fields are sent
// as typed, the API checks them and names the field it refuses), Delete
// (DELETE …/checkpoints?step=N), plus Delete all. What may be done is the
// API's to say: a refused action shows the API's own message (e.g. "the task is RUNNING: … once it has
// ended"), nothing is decided here. Refreshed every 10 s while the tab is open and the task runs.
import { api, confirmDialog, el, fmtBytes, fmtTime, formDialog, poll, promptDialog, sayResult, t } from "./common.js";
import { errorMessage, fieldMessage } from "./messages.js";

/** A refusal as the API worded it: its message, then each field it named with that field's own message. */
function refusal(e) {
  return [errorMessage(e), ...(e.errors || []).map((x) => `${x.field}: ${fieldMessage(x)}`)].join(" — ");
}

/** A number field as the user typed it: empty → left out; a number → that number; anything else → the text itself
 * (the API says what it wants). */
function typed(text) {
  const s = text.trim();
  if (s === "") return undefined;
  const n = Number(s);
  return Number.isFinite(n) ? n : s;
}

/** The lm_eval block from the form: tasks split at commas, nothing checked here (the API does). */
function lmEvalBlock(form) {
  const block = {
    tasks: form.tasks.split(",").map((x) => x.trim()).filter((x) => x !== ""),
    include_path: form.include_path.trim() || undefined,
    limit: typed(form.limit),
    num_fewshot: typed(form.num_fewshot),
  };
  return Object.fromEntries(Object.entries(block).filter(([, v]) => v !== undefined));
}

function stateText(state) {
  if (state === "complete") return t("task.ckpt_complete");
  if (state === "writing") return t("task.ckpt_writing");
  if (state === "incomplete") return t("task.ckpt_incomplete");
  return state;
}

export function startCheckpoints(base, taskId, finished) {
  const bodyEl = document.getElementById("ckpt-body");
  const result = document.getElementById("ckpt-result");
  const deleteAll = document.getElementById("ckpt-delete-all");
  let poller = null;

  const say = (ok, text, link) => sayResult(result, ok, text, link);
  // the lm-eval form's last answer on this page: a second step is evaluated the same way without retyping
  let lmForm = { tasks: "", include_path: "$HOME/code/lm_tasks", limit: "", num_fewshot: "" };

  function taskLink(id) {
    return el("a", { href: `/tasks/${encodeURIComponent(id)}`, class: "mono", "data-new-task": id }, id);
  }

  /** Run one API call; say what it answered (a submitted task — resume, export — is linked). */
  async function act(fn, okText, submits = false) {
    try {
      const r = await fn();
      say(true, okText(r), submits ? taskLink(r.task_id) : null);
    } catch (e) {
      say(false, refusal(e));
    }
    await load();
  }

  function row(s) {
    const size = s.size_exact ? fmtBytes(s.size_bytes) : t("task.ckpt_size_more", { size: fmtBytes(s.size_bytes) });
    const actions = s.complete ? [
      el("button", { type: "button", "data-act": "resume", onclick: () => act(
        () => api(`${base}/resume`, { method: "POST", body: { step: s.step } }), () => t("task.ckpt_resumed"), true) },
      t("task.ckpt_resume")),
      el("button", { type: "button", "data-act": "evaluate", onclick: () => act(
        () => api(`${base}/evaluate`, { method: "POST", body: { step: s.step } }), () => t("task.ckpt_evaluated"), true) },
      t("task.ckpt_evaluate")),
      el("button", { type: "button", "data-act": "lm-eval", onclick: () => lmEval(s.step) }, t("task.ckpt_lm_eval")),
      el("button", { type: "button", "data-act": "export", onclick: async () => {
        const to = await promptDialog(t("task.ckpt_export_to", { step: s.step, id: taskId }), "");
        if (to === null) return;
        act(() => api(`${base}/export`, { method: "POST", body: { step: s.step, to: to.trim() || null } }),
          () => t("task.ckpt_exported"), true);
      } }, t("task.ckpt_export")),
    ] : [];
    actions.push(el("button", { type: "button", class: "danger", "data-act": "delete", onclick: async () => {
      if (!(await confirmDialog(t("task.ckpt_delete_confirm", { step: s.step, id: taskId }), { danger: true }))) return;
      act(() => api(`${base}/checkpoints?step=${s.step}`, { method: "DELETE" }),
        (r) => t("task.ckpt_deleted", { path: r.removed }));
    } }, t("task.ckpt_delete")));
    return el("tr", { "data-step": s.step, "data-state": s.state, title: s.path },
      el("td", { class: "mono" }, String(s.step)),
      el("td", {}, stateText(s.state)),
      el("td", { class: "num" }, size),
      el("td", {}, fmtTime(s.modified_at)),
      el("td", { class: "ckpt-scores" }, scores(s.evaluations || [])),
      el("td", { class: "ckpt-actions" }, actions));
  }

  /** Ask for the lm-eval tasks and options in a small form; submit them for the step as typed. */
  async function lmEval(step) {
    const form = await formDialog(t("task.ckpt_lm_eval_ask", { step, id: taskId }), [
      { name: "tasks", label: t("task.ckpt_lm_tasks"), value: lmForm.tasks, hint: "my_task, other_task" },
      { name: "include_path", label: t("task.ckpt_lm_include"), value: lmForm.include_path },
      { name: "limit", label: t("task.ckpt_lm_limit"), value: lmForm.limit, inputmode: "decimal" },
      { name: "num_fewshot", label: t("task.ckpt_lm_fewshot"), value: lmForm.num_fewshot, inputmode: "numeric" },
    ], { ok: t("task.ckpt_lm_submit") });
    if (form === null) return;
    lmForm = form;
    act(() => api(`${base}/evaluate`, { method: "POST", body: { step, lm_eval: lmEvalBlock(form) } }),
      () => t("task.ckpt_evaluated"), true);
  }

  /** The step's latest evaluation: its val-core scores (all scores when none is core) once it succeeded,
   * else a link to its task with the task's status. */
  function scores(evals) {
    if (!evals.length) return [];
    const e = evals[evals.length - 1];
    if (!e.scores) return [taskLink(e.task_id), " ", t("status." + e.status)];
    const all = Object.entries(e.scores);
    const core = all.filter(([k]) => k.startsWith("val-core/"));
    return (core.length ? core : all).map(([k, v]) =>
      el("div", { class: "mono", "data-metric": k }, `${k} = ${Number(v).toPrecision(4)}`));
  }

  async function load() {
    const data = await api(`${base}/checkpoints`);
    document.getElementById("ckpt-folder").textContent =
      t("task.ckpt_folder", { folder: data.folder, latest: data.latest === null ? "—" : data.latest });
    document.getElementById("ckpt-empty").hidden = data.steps.length > 0;
    document.getElementById("ckpt-table").hidden = data.steps.length === 0;
    deleteAll.hidden = data.steps.length === 0;
    bodyEl.replaceChildren(...data.steps.slice().reverse().map(row)); // newest first
    document.querySelector('[data-pane="checkpoints"]').dataset.loaded = "1";
    if (finished() && poller) { poller.stop(); poller = null; }
  }

  deleteAll.addEventListener("click", async () => {
    if (!(await confirmDialog(t("task.ckpt_delete_all_confirm", { id: taskId }), { danger: true }))) return;
    act(() => api(`${base}/checkpoints`, { method: "DELETE" }), (r) => t("task.ckpt_deleted", { path: r.removed }));
  });

  return {
    open() {
      if (poller) { poller.now(); return; }
      poller = poll(load, 10000);
      poller.now();
    },
  };
}
