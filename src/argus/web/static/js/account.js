// Account page: who I am, storage and GPU-hours, SFTP password, SSH keys, API tokens (all /api/v2/me…).
import { api, confirmDialog, copyText, el, fmtBytes, fmtTime, t } from "./common.js";
import { errorMessage, fieldMessage, problemText } from "./messages.js";

const errorBox = document.getElementById("acct-error");
function showError(e) {
  errorBox.hidden = !e;
  errorBox.textContent = e ? errorMessage(e) : "";
}
function status(id, text, ok) {
  const node = document.getElementById(id);
  node.textContent = text;
  node.className = ok ? "ok" : "error";
}

async function loadMe() {
  const me = await api("/api/v2/me");
  document.getElementById("me-name").textContent = me.name;
  document.getElementById("me-role").textContent = me.is_admin ? t("account.role_admin") : t("account.role_user");
  document.getElementById("me-home").textContent = me.home;
  // A first password needs no current one (the API's rule); once one is set, the field is required.
  const current = document.getElementById("pw-current");
  current.closest("label").hidden = !me.has_password;
  current.required = me.has_password;
  const u = await api("/api/v2/files/usage");
  const bar = document.getElementById("storage-bar");
  bar.max = u.quota_bytes || Math.max(u.used_bytes, 1);
  bar.value = u.used_bytes;
  bar.hidden = u.quota_bytes === null; // no quota: nothing to fill up
  document.getElementById("storage-text").textContent = u.quota_bytes === null
    ? t("account.storage_no_quota", { used: fmtBytes(u.used_bytes) })
    : t("account.storage", { used: fmtBytes(u.used_bytes), quota: fmtBytes(u.quota_bytes) });
  try {
    const usage = await api(`/api/v2/usage?group_by=user&user=${encodeURIComponent(me.name)}`);
    document.getElementById("gpu-hours").textContent =
      t("account.gpu_hours", { gpu: usage.total.gpu_hours.toFixed(2), cpu: usage.total.cpu_hours.toFixed(2) });
  } catch { /* accounting may be unavailable; the rest of the page still works */ }
}

async function loadKeys() {
  const keys = await api("/api/v2/me/keys");
  document.getElementById("keys-body").replaceChildren(...keys.map((k) => el("tr", { "data-key": k.id },
    el("td", { class: "mono" }, k.fingerprint), el("td", {}, k.comment || ""), el("td", {}, fmtTime(k.created_at)),
    el("td", {}, el("button", { type: "button", class: "key-remove", onclick: () => removeKey(k) }, t("account.remove"))))));
}

async function removeKey(k) {
  if (!(await confirmDialog(t("account.key_remove_confirm", { fp: k.fingerprint }), { danger: true }))) return;
  try { await api(`/api/v2/me/keys/${k.id}`, { method: "DELETE" }); await loadKeys(); } catch (e) { showError(e); }
}

async function loadTokens() {
  const tokens = await api("/api/v2/me/tokens");
  document.getElementById("tokens-body").replaceChildren(...tokens.map((tk) => el("tr", { "data-token": tk.id },
    el("td", {}, tk.name || ""), el("td", { class: "mono" }, `${tk.prefix}…`), el("td", {}, fmtTime(tk.created_at)),
    el("td", {}, tk.revoked_at ? t("account.revoked", { time: fmtTime(tk.revoked_at) }) : t("account.active")),
    el("td", {}, tk.revoked_at ? "" : el("button", { type: "button", class: "token-revoke", onclick: () => revoke(tk) }, t("account.revoke"))))));
}

async function revoke(tk) {
  if (!(await confirmDialog(t("account.revoke_confirm", { prefix: tk.prefix }), { danger: true }))) return;
  try { await api(`/api/v2/me/tokens/${tk.id}`, { method: "DELETE" }); await loadTokens(); } catch (e) { showError(e); }
}

document.getElementById("pw-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const pw = document.getElementById("pw-new").value, again = document.getElementById("pw-repeat").value;
  if (pw !== again) { status("pw-status", t("account.password_mismatch"), false); return; }
  try {
    const current = document.getElementById("pw-current");
    const body = current.closest("label").hidden ? { password: pw } : { password: pw, current_password: current.value };
    await api("/api/v2/me/password", { method: "POST", body });
    status("pw-status", t("account.password_saved"), true);
    ev.target.reset();
    current.closest("label").hidden = false; // now there is one: the next change needs it
    current.required = true;
  } catch (e) {
    status("pw-status", problemText(e), false);
  }
});

document.getElementById("key-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  try {
    await api("/api/v2/me/keys", { method: "POST", body: { public_key: document.getElementById("key-text").value.trim() } });
    document.getElementById("key-text").value = "";
    status("key-status", t("account.key_added"), true);
    await loadKeys();
  } catch (e) {
    status("key-status", [errorMessage(e), ...(e.errors || []).map(fieldMessage)].join(": "), false);
  }
});

document.getElementById("token-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  try {
    const label = document.getElementById("token-label").value.trim();
    const made = await api("/api/v2/me/tokens", { method: "POST", body: { name: label || null } });
    document.getElementById("token-secret").textContent = made.token;
    document.getElementById("token-copied").textContent = "";
    document.getElementById("token-secret-box").hidden = false;
    document.getElementById("token-label").value = "";
    await loadTokens();
  } catch (e) { showError(e); }
});

// The new token is shown once: one click puts it on the clipboard, and the page says it did.
document.getElementById("token-copy").addEventListener("click", async () => {
  const ok = await copyText(document.getElementById("token-secret").textContent);
  document.getElementById("token-copied").textContent = ok ? t("account.token_copied") : t("account.token_copy_failed");
});

Promise.all([loadMe(), loadKeys(), loadTokens()])
  .then(() => { document.body.dataset.loaded = "1"; })
  .catch(showError);
