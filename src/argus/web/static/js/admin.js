// Admin page (admins only; the API refuses anyone else): users (create with a first password and
// token shown once, disable/enable, reset password), each user's limits and storage quota edited in
// place (PATCH /api/v2/users/{name}: the API validates, this page shows its answer as it is), GPU-hours
// per user over 30 days (GET /api/v2/usage), storage per user, the queue across users. The audit log
// is admin_audit.js. Rules live in the API: the page only mirrors one for comfort (no Disable button
// on one's own row; the API refuses it with 409 anyway).
import { api, confirmDialog, el, fmtBytes, fmtTime, gpus, page, poll, promptDialog, statusBadge, t } from "./common.js";
import { problemText, sayMessage } from "./messages.js";

const GIB = 2 ** 30;
const errorBox = document.getElementById("admin-error");

/** The API's error as it said it, in the page's language: its message, then each field's problem (field: message). */
function showError(e) {
  errorBox.hidden = !e;
  errorBox.textContent = e ? problemText(e) : "";
}

/** A password for a new user, from the browser's CSPRNG (shown once, then changed by its user). */
function randomPassword() {
  const alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
  const bytes = crypto.getRandomValues(new Uint8Array(18));
  return Array.from(bytes, (b) => alphabet[b % alphabet.length]).join("");
}

/** What an input holds, for the API: empty is null (the platform default), a number is a number, and
 * anything else goes as typed so the API names the problem (the page does not judge it). */
function limitValue(text, scale = 1) {
  const s = text.trim();
  if (s === "") return null;
  const n = Number(s);
  if (!Number.isFinite(n) || !/^[0-9.eE+-]+$/.test(s)) return s;
  return scale === 1 ? n : Math.round(n * scale);  // a fraction of a count goes as typed: the API names it
}

function limitInput(cls, value, label, scale = 1) {
  const shown = value === null || value === undefined ? "" : String(+(value / scale).toFixed(3));
  return el("input", { class: `admin-limit ${cls}`, value: shown, inputmode: "decimal", size: 6,
    placeholder: t("admin.default"), "aria-label": label });
}

function userRow(u, storage, hours) {
  const self = u.name === page.user;
  const gpusIn = limitInput("max-gpus", u.max_gpus, t("admin.max_gpus"));
  const runIn = limitInput("max-running", u.max_running_tasks, t("admin.max_running"));
  const quotaIn = limitInput("quota", u.quota_bytes, t("admin.quota_gib"), GIB);
  const save = async () => {
    try {
      await api(`/api/v2/users/${encodeURIComponent(u.name)}`, { method: "PATCH", body: {
        max_gpus: limitValue(gpusIn.value), max_running_tasks: limitValue(runIn.value),
        quota_bytes: limitValue(quotaIn.value, GIB) } });
      showError(null);
      await loadUsers();
    } catch (e) {
      showError(e);
      const bad = new Set((e.errors || []).map((x) => x.field));  // mark the inputs the API named
      for (const [field, input] of [["max_gpus", gpusIn], ["max_running_tasks", runIn], ["quota_bytes", quotaIn]])
        input.setAttribute("aria-invalid", bad.has(field) ? "true" : "false");
    }
  };
  const toggleBtn = el("button", { type: "button", class: u.disabled ? "enable" : "disable", onclick: () => toggle(u),
    disabled: self && !u.disabled, title: self && !u.disabled ? t("admin.cannot_disable_self") : null },
  u.disabled ? t("admin.enable") : t("admin.disable"));
  return el("tr", { "data-user": u.name },
    el("td", { class: "mono" }, u.name),
    el("td", {}, u.is_admin ? t("account.role_admin") : t("account.role_user")),
    el("td", {}, u.disabled ? el("span", { class: "badge st-failed" }, t("admin.disabled")) : t("account.active")),
    el("td", {}, gpusIn), el("td", {}, runIn), el("td", {}, quotaIn),
    el("td", { class: "num gpu-hours" }, (hours || 0).toFixed(1)),
    el("td", {}, storage.quota_bytes ? `${fmtBytes(storage.used_bytes)} / ${fmtBytes(storage.quota_bytes)}`
      : fmtBytes(storage.used_bytes)),
    el("td", {}, fmtTime(u.created_at)),
    el("td", { class: "actions" },
      el("button", { type: "button", class: "save-limits", onclick: save }, t("admin.save_limits")),
      toggleBtn,
      el("button", { type: "button", class: "reset-password", onclick: () => resetPassword(u) }, t("admin.reset_password"))));
}

async function loadUsers() {
  document.dispatchEvent(new Event("admin-changed")); // the audit log (admin_audit.js) shows what was just done
  const [users, storage, usage] = await Promise.all([
    api("/api/v2/users"), api("/api/v2/users/storage"), api("/api/v2/usage?group_by=user")]);
  const used = new Map(storage.map((s) => [s.name, s]));
  const hours = new Map(usage.rows.map((r) => [r.key, r.gpu_hours]));
  document.getElementById("users-body").replaceChildren(
    ...users.map((u) => userRow(u, used.get(u.name) || {}, hours.get(u.name))));
}

async function toggle(u) {
  if (!u.disabled && !(await confirmDialog(t("admin.disable_confirm", { name: u.name }), { danger: true }))) return;
  try {
    await api(`/api/v2/users/${encodeURIComponent(u.name)}/${u.disabled ? "enable" : "disable"}`, { method: "POST" });
    showError(null);
    await loadUsers();
  } catch (e) { showError(e); }
}

async function resetPassword(u) {
  const pw = await promptDialog(t("admin.reset_prompt", { name: u.name }), randomPassword());
  if (!pw) return;
  try {
    await api(`/api/v2/users/${encodeURIComponent(u.name)}/password`, { method: "POST", body: { password: pw } });
    showError(null);
  } catch (e) { showError(e); }
}

document.getElementById("new-password").value = randomPassword();
document.getElementById("create-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const name = document.getElementById("new-name").value.trim();
  const password = document.getElementById("new-password").value;
  try {
    await api("/api/v2/users", { method: "POST", body: { name, is_admin: document.getElementById("new-admin").checked } });
    await api(`/api/v2/users/${encodeURIComponent(name)}/password`, { method: "POST", body: { password } });
    const tok = await api(`/api/v2/users/${encodeURIComponent(name)}/tokens`, { method: "POST", body: { name: "first token" } });
    document.getElementById("created-name").textContent = name;
    document.getElementById("created-password").textContent = password;
    document.getElementById("created-token").textContent = tok.token;
    document.getElementById("created").hidden = false;
    document.getElementById("new-name").value = "";
    document.getElementById("new-password").value = randomPassword();
    showError(null);
    await loadUsers();
  } catch (e) { showError(e); }
});

// The queue across users, a page at a time from the server (GET /api/v2/tasks?limit=&offset=, its total):
// a busy cluster's thousands of queued tasks are never one table.
const QUEUE_PAGE = 25;
let queueOffset = 0;

async function loadQueue() {
  const data = await api(`/api/v2/tasks?status=QUEUED,SUBMITTED,RUNNING,CANCELING&limit=${QUEUE_PAGE}&offset=${queueOffset}`);
  if (!data.items.length && queueOffset > 0 && data.total > 0) {  // the page emptied meanwhile: show the last one
    queueOffset = Math.max(0, Math.floor((data.total - 1) / QUEUE_PAGE) * QUEUE_PAGE);
    return loadQueue();
  }
  document.getElementById("aq-body").replaceChildren(...data.items.map((x) => el("tr", { "data-task": x.task_id },
    el("td", { class: "mono" }, el("a", { href: `/tasks/${encodeURIComponent(x.task_id)}` }, x.task_id)),
    el("td", {}, x.user), el("td", {}, statusBadge(x.status)), el("td", { class: "mono" }, gpus(x)),
    el("td", {}, fmtTime(x.created_at)), el("td", { class: "reason" }, x.pending_reason
      ? sayMessage(x.pending_reason_code, x.pending_reason_params, x.pending_reason) : x.status_message || ""))));
  document.getElementById("aq-empty").hidden = data.items.length > 0;
  const pager = document.getElementById("aq-pager");
  pager.hidden = data.total <= QUEUE_PAGE && queueOffset === 0;
  document.getElementById("aq-range").textContent = t("admin.queue_range",
    { from: data.items.length ? data.offset + 1 : 0, to: data.offset + data.items.length, total: data.total });
  document.getElementById("aq-prev").disabled = data.offset === 0;
  document.getElementById("aq-next").disabled = data.offset + data.items.length >= data.total;
  document.getElementById("aq-table").dataset.offset = String(data.offset);
}

const queuePoll = poll(loadQueue, 5000);
for (const [id, step] of [["aq-prev", -QUEUE_PAGE], ["aq-next", QUEUE_PAGE]])
  document.getElementById(id).addEventListener("click", () => {
    queueOffset = Math.max(0, queueOffset + step);
    queuePoll.now();
  });

loadUsers().then(() => { document.body.dataset.loaded = "1"; }).catch(showError);
queuePoll.now();
