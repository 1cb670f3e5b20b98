// Account page, Notifications (issue 24): your webhooks and e-mail addresses, a test, the last deliveries.
// Every rule (what a URL may be, which events exist, whether e-mail is on) is the API's: this only shows it.
import { api, confirmDialog, el, fmtTime, t } from "./common.js";
import { problemText } from "./messages.js";

const body = document.getElementById("notify-body");
const kind = document.getElementById("notify-kind");
const target = document.getElementById("notify-target");
const eventsBox = document.getElementById("notify-events");
const STATES = {
  delivered: t("notify.state_delivered"), pending: t("notify.state_pending"), failed: t("notify.state_failed"),
};
const PLACEHOLDER = { webhook: "https://hooks.example.com/argus", email: "me@example.com" };
let shown = null; // the channel whose deliveries are open

function status(text, ok) {
  const node = document.getElementById("notify-status");
  node.textContent = text;
  node.className = ok ? "ok" : "error";
}

function problem(e) {
  return problemText(e);
}

async function loadOptions() {
  const opts = await api("/api/v2/notifications/options");
  eventsBox.replaceChildren(eventsBox.querySelector("legend"), ...opts.events.map((ev) =>
    el("label", { class: "check" }, el("input", { type: "checkbox", value: ev, checked: true, "data-event": ev }), ` ${ev}`)));
  kind.querySelector('option[value="email"]').disabled = !opts.email_enabled;
  document.getElementById("notify-email-off").hidden = opts.email_enabled;
}

async function loadChannels() {
  const channels = await api("/api/v2/notifications");
  body.replaceChildren(...channels.map((c) => el("tr", { "data-channel": c.id },
    el("td", {}, c.kind === "email" ? t("notify.kind_email") : t("notify.kind_webhook")),
    el("td", { class: "mono" }, c.target),
    el("td", {}, c.events.join(", ")),
    el("td", {}, fmtTime(c.created_at)),
    el("td", {},
      el("button", { type: "button", class: "notify-test", onclick: () => sendTest(c) }, t("notify.test")), " ",
      el("button", { type: "button", class: "notify-show", onclick: () => showDeliveries(c) }, t("notify.deliveries")), " ",
      el("button", { type: "button", class: "notify-remove", onclick: () => remove(c) }, t("account.remove"))))));
}

async function showDeliveries(c) {
  shown = c;
  const rows = await api(`/api/v2/notifications/${c.id}/deliveries`);
  document.getElementById("notify-deliveries-title").textContent = t("notify.deliveries_of", { target: c.target });
  document.getElementById("notify-deliveries-body").replaceChildren(...rows.map((d) => el("tr", { "data-delivery": d.id, "data-state": d.state },
    el("td", {}, d.event), el("td", { class: "mono" }, d.task_id || ""),
    el("td", { class: d.state === "failed" ? "error" : d.state === "delivered" ? "ok" : "" }, STATES[d.state] || d.state),
    el("td", {}, String(d.attempts)), el("td", {}, fmtTime(d.created_at)),
    el("td", {}, d.delivered_at ? fmtTime(d.delivered_at) : ""), el("td", {}, d.last_error || ""))));
  document.getElementById("notify-deliveries").hidden = false;
  return rows;
}

async function sendTest(c) {
  try {
    await api(`/api/v2/notifications/${c.id}/test`, { method: "POST" });
    status(t("notify.test_queued"), true);
    // the server's sender delivers within seconds: follow it until the test is no longer pending
    for (let i = 0; i < 20; i++) {
      const rows = await showDeliveries(c);
      if (rows.length && rows[0].state !== "pending") break;
      await new Promise((r) => setTimeout(r, 1000));
    }
  } catch (e) { status(problem(e), false); }
}

async function remove(c) {
  if (!(await confirmDialog(t("notify.remove_confirm", { target: c.target }), { danger: true }))) return;
  try {
    await api(`/api/v2/notifications/${c.id}`, { method: "DELETE" });
    if (shown && shown.id === c.id) document.getElementById("notify-deliveries").hidden = true;
    await loadChannels();
  } catch (e) { status(problem(e), false); }
}

kind.addEventListener("change", () => { target.placeholder = PLACEHOLDER[kind.value] || ""; });

document.getElementById("notify-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const events = [...eventsBox.querySelectorAll("input[type=checkbox]:checked")].map((x) => x.value);
  try {
    const made = await api("/api/v2/notifications", { method: "POST", body: { kind: kind.value, target: target.value.trim(), events } });
    target.value = "";
    status(t("notify.added"), true);
    document.getElementById("notify-secret-box").hidden = !made.secret;
    document.getElementById("notify-secret").textContent = made.secret || "";
    await loadChannels();
  } catch (e) { status(problem(e), false); }
});

Promise.all([loadOptions(), loadChannels()])
  .then(() => { document.body.dataset.notifyLoaded = "1"; })
  .catch((e) => status(problem(e), false));
