// Queue position and ETA (issue 24): a queued task's place and estimated start, a running task's progress
// (GET /api/v2/tasks/{id} `queue` / `progress`), and the tasks list's line for queued rows (`queue_position`,
// `eta`). The estimate itself is the server's (core/eta.py); this only shows it. Text nodes only.
import { el, fmtDuration, fmtTime, setText, t } from "./common.js";
import { sayMessage } from "./messages.js";

/** "14:20 (in 1 h 5 min)" in the viewer's time zone, "now" when it is due, "unknown" without a time. */
export function etaText(iso) {
  if (!iso) return t("task.unknown");
  const left = (new Date(iso).getTime() - Date.now()) / 1000;
  if (!(left > 30)) return t("task.eta_now");
  return t("task.eta_in", { time: fmtTime(iso), d: fmtDuration(left) });
}

/** The queued row's line under its status in the tasks list, or null. */
export function queueCell(task) {
  if (task.status !== "QUEUED" || task.queue_position === null || task.queue_position === undefined) return null;
  const n = task.queue_position;
  return el("div", { class: "muted queue", "data-queue": n },
    task.eta ? t("tasks.queue", { n, eta: etaText(task.eta) }) : t("tasks.queue_unknown", { n }));
}

/** The task page's two blocks (templates/task.html, #queue-block and #progress-block): one shows, or none. */
export function renderEta(tk) {
  const queue = document.getElementById("queue-block");
  const progress = document.getElementById("progress-block");
  if (!queue || !progress) return;
  const q = tk.status === "QUEUED" ? tk.queue : null;
  queue.hidden = !q;
  if (q) {
    setText("q-position", t("task.queue_of", { n: q.position, total: q.competing, resource: q.resource }));
    setText("q-eta", etaText(q.eta));
    setText("q-reason", sayMessage(q.eta_reason_code, q.eta_reason_params, q.eta_reason)); // in the page's language
  }
  const p = tk.status === "RUNNING" ? tk.progress : null;
  progress.hidden = !p;
  if (p) {
    setText("p-step", p.step === null ? t("task.unknown") : `${p.step} / ${p.total_steps ?? "?"}`);
    setText("p-rate", p.steps_per_hour === null ? t("task.unknown")
      : (p.steps_per_hour >= 10 ? p.steps_per_hour.toFixed(0) : p.steps_per_hour.toPrecision(2)));
    setText("p-gpu-hours", p.gpu_hours.toFixed(p.gpu_hours >= 1 ? 1 : 2));
    setText("p-eta-end", etaText(p.eta_end));
  }
}
