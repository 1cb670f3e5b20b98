// The "Compare with…" control of the task page (and "Add" on the Compare page): type a task id or name
// (suggestions come from GET /api/v2/tasks?q=, the same search as the tasks list), and go to
// /compare?tasks=<these>,<others>.
// Several may be given, comma-separated. An id the user cannot see is named by the Compare page (the
// API's `missing`, the other runs still shown), so nothing is checked here beyond "something was typed".
import { api, el, t } from "./common.js";

// `current`: the task ids already in the comparison (the task page: its own id).
export function startCompareLink(current) {
  const form = document.getElementById("compare-form");
  const input = document.getElementById("compare-with");
  const list = document.getElementById("compare-options");
  const error = document.getElementById("compare-error");
  const names = new Map(); // name → id, from the suggestions shown
  let timer = null;
  input.addEventListener("input", () => {
    clearTimeout(timer);
    const q = input.value.split(",").pop().trim();
    timer = setTimeout(async () => {
      const res = await api(`/api/v2/tasks?limit=20${q ? `&q=${encodeURIComponent(q)}` : ""}`);
      const others = res.items.filter((x) => !current.includes(x.task_id));
      for (const x of others) if (x.name) names.set(x.name, x.task_id);
      list.replaceChildren(...others.map((x) => el("option", { value: x.task_id }, x.name || x.task_id)));
    }, 200);
  });
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const ids = input.value.split(",").map((w) => w.trim()).filter(Boolean).map((w) => names.get(w) || w);
    if (!ids.length) { error.textContent = t("charts.compare_none"); input.focus(); return; }
    error.textContent = "";
    const all = [...current, ...ids.filter((x, i) => !current.includes(x) && ids.indexOf(x) === i)];
    location.href = `/compare?tasks=${all.map(encodeURIComponent).join(",")}`;
  });
}
