// Admin page (admins only; the API refuses anyone else): users (create with a first password and
// token shown once, disable/enable, reset password), storage per user, the queue across users.
import { api, el, fmtBytes, fmtTime, gpus, poll, statusBadge, t } from "./common.js";

const errorBox = document.getElementById("admin-error");
function showError(e) {
  errorBox.hidden = !e;
  errorBox.textContent = e ? [e.message, ...(e.errors || []).map((x) => x.message)].join(": ") : "";
}

/** A password for a new user, from the browser's CSPRNG (shown once, then changed by its user). */
function randomPassword() {
  const alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
  const bytes = crypto.getRandomValues(new Uint8Array(18));
  return Array.from(bytes, (b) => alphabet[b % alphabet.length]).join("");
}

async function loadUsers() {
  const [users, storage] = await Promise.all([api("/api/v2/users"), api("/api/v2/users/storage")]);
  const used = new Map(storage.map((s) => [s.name, s]));
  document.getElementById("users-body").replaceChildren(...users.map((u) => {
    const s = used.get(u.name) || {};
    return el("tr", { "data-user": u.name },
      el("td", { class: "mono" }, u.name),
      el("td", {}, u.is_admin ? t("account.role_admin") : t("account.role_user")),
      el("td", {}, u.disabled ? el("span", { class: "badge st-failed" }, t("admin.disabled")) : t("account.active")),
      el("td", {}, s.quota_bytes ? `${fmtBytes(s.used_bytes)} / ${fmtBytes(s.quota_bytes)}` : fmtBytes(s.used_bytes)),
      el("td", {}, fmtTime(u.created_at)),
      el("td", { class: "actions" },
        el("button", { type: "button", class: u.disabled ? "enable" : "disable", onclick: () => toggle(u) },
          u.disabled ? t("admin.enable") : t("admin.disable")),
        el("button", { type: "button", class: "reset-password", onclick: () => resetPassword(u) }, t("admin.reset_password"))));
  }));
}

async function toggle(u) {
  if (!u.disabled && !window.confirm(t("admin.disable_confirm", { name: u.name }))) return;
  try {
    await api(`/api/v2/users/${encodeURIComponent(u.name)}/${u.disabled ? "enable" : "disable"}`, { method: "POST" });
    await loadUsers();
  } catch (e) { showError(e); }
}

async function resetPassword(u) {
  const pw = window.prompt(t("admin.reset_prompt", { name: u.name }), randomPassword());
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

async function loadQueue() {
  const data = await api("/api/v2/tasks?status=QUEUED,SUBMITTED,RUNNING,CANCELING&limit=200");
  document.getElementById("aq-body").replaceChildren(...data.items.map((x) => el("tr", { "data-task": x.task_id },
    el("td", { class: "mono" }, el("a", { href: `/tasks/${encodeURIComponent(x.task_id)}` }, x.task_id)),
    el("td", {}, x.user), el("td", {}, statusBadge(x.status)), el("td", { class: "mono" }, gpus(x)),
    el("td", {}, fmtTime(x.created_at)), el("td", { class: "reason" }, x.pending_reason || x.status_message || ""))));
  document.getElementById("aq-empty").hidden = data.items.length > 0;
}

loadUsers().then(() => { document.body.dataset.loaded = "1"; }).catch(showError);
poll(loadQueue, 5000).now();
