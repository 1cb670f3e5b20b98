// The Admin page's audit log: GET /api/v2/audit, newest first, a page of PAGE events at a time
// ("Older" follows the API's cursor), filtered by a user (events by or about them) and an action
// (the page lists the API's fixed vocabulary). The API checks the filters; its errors show as said.
import { api, el, fmtTime, t } from "./common.js";
import { problemText } from "./messages.js";

const PAGE = 25;
const body = document.getElementById("audit-body");
const more = document.getElementById("audit-more");
const errorBox = document.getElementById("admin-error");
let cursor = null;
let asked = 0; // the newest request: an older answer arriving late is dropped

function detailText(detail) {
  if (!detail) return "";
  return Object.entries(detail).map(([k, v]) => `${k}=${typeof v === "object" ? JSON.stringify(v) : v}`).join(" ");
}

function row(e) {
  return el("tr", { "data-audit": e.id },
    el("td", {}, fmtTime(e.at)), el("td", { class: "mono" }, e.actor),
    el("td", { class: "mono audit-action" }, e.action), el("td", { class: "mono" }, e.target || ""),
    el("td", { class: "mono audit-detail" }, detailText(e.detail)), el("td", { class: "mono" }, e.source_ip || ""));
}

async function load(append) {
  const q = new URLSearchParams({ limit: String(PAGE) });
  const user = document.getElementById("audit-actor").value.trim();
  const action = document.getElementById("audit-action").value;
  if (user) q.set("user", user);
  if (action) q.set("action", action);
  if (append && cursor) q.set("cursor", cursor);
  const mine = ++asked;
  try {
    const data = await api(`/api/v2/audit?${q}`);
    if (mine !== asked) return;
    const rows = data.events.map(row);
    if (append) body.append(...rows); else body.replaceChildren(...rows);
    cursor = data.next_cursor;
    more.hidden = !cursor;
    document.getElementById("audit-empty").hidden = body.children.length > 0;
    errorBox.hidden = true;
  } catch (e) {
    errorBox.hidden = false;
    errorBox.textContent = problemText(e);
  }
  document.getElementById("audit-table").dataset.loaded = "1";
}

document.getElementById("audit-filter").addEventListener("submit", (ev) => { ev.preventDefault(); load(false); });
more.addEventListener("click", () => load(true));
document.addEventListener("admin-changed", () => load(false)); // after the users table changed something
load(false);
