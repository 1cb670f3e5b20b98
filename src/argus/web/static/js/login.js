// Sign in with user + password (the SFTP password) or an API token; the server sets the session cookie.
import { page, t } from "./common.js";

const form = document.getElementById("login-form");
const error = document.getElementById("login-error");
let mode = "password";

for (const tab of document.querySelectorAll(".tab[data-mode]")) {
  tab.addEventListener("click", () => {
    mode = tab.dataset.mode;
    for (const other of document.querySelectorAll(".tab[data-mode]")) other.classList.toggle("active", other === tab);
    for (const part of form.querySelectorAll("[data-for]")) part.hidden = part.dataset.for !== mode;
  });
}

form.addEventListener("submit", async (ev) => {
  ev.preventDefault();
  error.hidden = true;
  const body = mode === "token"
    ? { token: document.getElementById("login-token").value }
    : { user: document.getElementById("login-user").value, password: document.getElementById("login-password").value };
  const r = await fetch("/api/v2/session", {
    method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "application/json" }, body: JSON.stringify(body),
  });
  if (r.ok) {
    location.assign(page.next || "/tasks");
    return;
  }
  // The API says why in detail.code; a disabled account is told so only after right credentials.
  let code = null;
  try { code = ((await r.json()).detail || {}).code; } catch { /* not JSON: the status says enough */ }
  error.textContent = r.status === 401 ? t("login.failed") : t("login.error", { status: r.status });
  if (r.status === 429) error.textContent = t("login.throttled");
  if (code === "user_disabled") error.textContent = t("login.disabled");
  if (code === "directory_unavailable") error.textContent = t("login.directory_down");
  if (code === "invalid_directory_name") error.textContent = t("login.directory_name");
  error.hidden = false;
});
