// Teams page (issue 26): the user's teams (a site admin: every team) from GET /api/v2/teams/{name} — role,
// members, weight and limits, GPU-hours this month against the budget, tasks running now. A team's admins
// add and remove members and change roles; site admins create teams and set weight, limits, budget and
// quota. Usage by team (GET /api/v2/usage?group_by=team|user|day&team=…) with its CSV link (format=csv).
// Every rule is the API's: the page shows controls by role for comfort only, sends what was typed, and
// shows the API's refusal as it said it (its message, then each field's problem), in the page's language.
import { api, confirmDialog, el, fmtBytes, page, t } from "./common.js";
import { problemText } from "./messages.js";

const GIB = 2 ** 30;
const errorBox = document.getElementById("teams-error");
const SETTINGS = [  // [API field, label key, scale of the input (GiB for the quota)]
  ["weight", "teams.weight", 1], ["max_gpus", "teams.max_gpus", 1], ["max_running_tasks", "teams.max_running", 1],
  ["gpu_hours_month", "teams.budget", 1], ["quota_bytes", "teams.quota_gib", GIB]];

function showError(e, inputs) {
  errorBox.hidden = !e;
  errorBox.textContent = e ? problemText(e) : "";
  const bad = new Set(((e && e.errors) || []).map((x) => x.field));  // mark the inputs the API named
  for (const [field, input] of Object.entries(inputs || {})) input.setAttribute("aria-invalid", bad.has(field) ? "true" : "false");
}

/** What an input holds, for the API: empty is null (no limit), a number is a number, anything else goes as
 * typed so that the API names the problem (the page does not judge it). */
function fieldValue(text, scale = 1) {
  const s = text.trim();
  if (s === "") return null;
  const n = Number(s);
  if (!Number.isFinite(n) || !/^[0-9.eE+-]+$/.test(s)) return s;
  return scale === 1 ? n : Math.round(n * scale);
}

/** The settings typed into inputs ({field: input}); an empty weight is left out (the API keeps 1 or the old one). */
function settingsOf(inputs) {
  const body = {};
  for (const [field, , scale] of SETTINGS) {
    const v = fieldValue(inputs[field].value, scale);
    if (!(field === "weight" && v === null)) body[field] = v;
  }
  return body;
}

/** Do one change through the API, then show the teams as they are now; on a refusal, the API's error (and,
 * with `reload`, the teams as they are: a select the API refused goes back to what it was). */
async function act(fn, inputs, reload = false) {
  try {
    await fn();
    showError(null, inputs);
    await load();
  } catch (e) {
    if (reload) await load().catch(() => {});
    showError(e, inputs);
  }
}

const roleText = (r) => ({ member: t("teams.role_member"), admin: t("teams.role_admin") }[r] || r);
const byText = (g) => ({ team: t("teams.by_team"), user: t("teams.by_user"), day: t("teams.by_day") }[g] || g);
const limit = (v) => (v === null || v === undefined ? t("teams.no_limit") : String(v));
const hours = (v) => (+v).toFixed(1);
const path = (team, ...rest) => ["/api/v2/teams", team, ...rest].map((p, i) => (i ? encodeURIComponent(p) : p)).join("/");

function budgetView(team) {
  const used = team.gpu_hours_used_month;
  if (team.gpu_hours_month === null) return el("span", { class: "team-budget" }, t("teams.used_no_budget", { used: hours(used) }));
  return el("span", { class: "team-budget" },
    el("progress", { max: Math.max(team.gpu_hours_month, 1e-9), value: Math.min(used, team.gpu_hours_month) }), " ",
    t("teams.used_of_budget", { used: hours(used), budget: hours(team.gpu_hours_month) }));
}

function memberRow(team, m, manage) {
  const self = m.name === page.user;
  const role = manage
    ? el("select", { class: "member-role", "aria-label": t("teams.role_of", { name: m.name }),
      onchange: (ev) => act(() => api(path(team.name, "members", m.name), { method: "PATCH", body: { role: ev.target.value } }), null, true) },
    ...["member", "admin"].map((r) => el("option", { value: r, selected: r === m.role }, roleText(r))))
    : roleText(m.role);
  const actions = [];
  if (self && !m.is_default)
    actions.push(el("button", { type: "button", class: "make-default",
      onclick: () => act(() => api(path(team.name, "default"), { method: "POST" })) }, t("teams.make_default")));
  if (manage || self)
    actions.push(el("button", { type: "button", class: "remove-member", onclick: async () => {
      const vars = { name: m.name, team: team.name };
      if (await confirmDialog(self ? t("teams.leave_confirm", vars) : t("teams.remove_confirm", vars), { danger: true }))
        act(() => api(path(team.name, "members", m.name), { method: "DELETE" }));
    } }, self ? t("teams.leave") : t("teams.remove")));
  return el("tr", { "data-member": m.name },
    el("td", { class: "member-name" }, el("span", { class: "mono" }, m.name),
      m.is_default ? el("span", { class: "badge default-badge" }, t("teams.default")) : null),
    el("td", {}, role), el("td", { class: "actions" }, ...actions));
}

function addMemberForm(team) {
  const user = el("input", { class: "add-user", required: true, maxlength: 32, autocomplete: "off", autocapitalize: "none",
    spellcheck: "false" });
  const role = el("select", { class: "add-role" }, ...["member", "admin"].map((r) => el("option", { value: r }, roleText(r))));
  return el("form", { class: "toolbar add-member", onsubmit: (ev) => {
    ev.preventDefault();
    act(() => api(path(team.name, "members"), { method: "POST", body: { user: user.value.trim(), role: role.value } }), { user });
  } },
  el("label", {}, t("teams.add_user"), " ", user), el("label", {}, t("teams.role"), " ", role),
  el("button", { type: "submit", class: "add-member-button" }, t("teams.add")));
}

function settingsForm(team) {
  const inputs = {};
  const labels = SETTINGS.map(([field, key, scale]) => {
    const v = team[field];
    inputs[field] = el("input", { class: `admin-limit set-${field}`, inputmode: "decimal",
      value: v === null ? "" : String(+(v / scale).toFixed(3)), placeholder: field === "weight" ? "1" : t("teams.no_limit") });
    return el("label", {}, t(key), " ", inputs[field]);
  });
  return el("form", { class: "toolbar team-settings", onsubmit: (ev) => {
    ev.preventDefault();
    act(() => api(path(team.name), { method: "PATCH", body: settingsOf(inputs) }), inputs);
  } }, ...labels, el("button", { type: "submit", class: "save-settings" }, t("teams.save")));
}

function teamCard(team) {
  const manage = team.my_role === "admin" || page.is_admin;
  const role = team.my_role ? roleText(team.my_role) : t("teams.site_admin");
  return el("section", { class: "card team", "data-team": team.name },
    el("h3", {}, el("span", { class: "mono" }, team.name), " ", el("span", { class: "badge team-role" }, role)),
    el("dl", { class: "kv" },
      el("dt", {}, t("teams.weight")), el("dd", { class: "team-weight" }, String(team.weight)),
      el("dt", {}, t("teams.max_gpus")), el("dd", { class: "team-max-gpus" }, limit(team.max_gpus)),
      el("dt", {}, t("teams.max_running")), el("dd", { class: "team-max-running" }, limit(team.max_running_tasks)),
      el("dt", {}, t("teams.this_month")), el("dd", {}, budgetView(team)),
      el("dt", {}, t("teams.running")), el("dd", { class: "team-running" },
        t("teams.running_now", { tasks: team.running_tasks, gpus: team.gpus_held })),
      el("dt", {}, t("teams.quota")), el("dd", {}, team.quota_bytes === null ? t("teams.no_limit") : fmtBytes(team.quota_bytes))),
    el("h4", {}, t("teams.members", { n: team.member_count })),
    el("div", { class: "admin-scroll" }, el("table", { class: "tasks team-members" },
      el("thead", {}, el("tr", {}, el("th", {}, t("teams.member")), el("th", {}, t("teams.role")), el("th", {}, ""))),
      el("tbody", {}, ...(team.members || []).map((m) => memberRow(team, m, manage))))),
    manage ? addMemberForm(team) : null,
    page.is_admin ? el("details", { class: "team-admin" }, el("summary", {}, t("teams.settings")), settingsForm(team)) : null);
}

let known = [];

async function load() {
  const list = await api("/api/v2/teams");
  const teams = await Promise.all(list.map((x) => api(path(x.name))));
  known = teams.map((x) => x.name);
  document.getElementById("teams-list").replaceChildren(...teams.map(teamCard));
  document.getElementById("teams-empty").hidden = teams.length > 0;
  fillUsageTeams();
  document.getElementById("teams-list").dataset.loaded = "1";  // for tests: the cards are this load's
}

// -- usage by team

const usageTeam = document.getElementById("usage-team");
const usageBy = document.getElementById("usage-by");

function fillUsageTeams() {
  const chosen = usageTeam.value;
  usageTeam.replaceChildren(el("option", { value: "" }, page.is_admin ? t("teams.all_teams") : t("teams.my_tasks")),
    ...known.map((n) => el("option", { value: n, selected: n === chosen }, n)));
}

function usageParams(extra) {
  const q = new URLSearchParams({ group_by: usageBy.value, ...extra });
  if (usageTeam.value) q.set("team", usageTeam.value);
  const from = document.getElementById("usage-from").value, to = document.getElementById("usage-to").value;
  if (from) q.set("from", from);
  if (to) q.set("to", to);
  return q;
}

async function loadUsage() {
  document.getElementById("usage-csv").href = `/api/v2/usage?${usageParams({ format: "csv" })}`;
  try {
    const r = await api(`/api/v2/usage?${usageParams()}`);
    showError(null);
    document.getElementById("usage-key-head").textContent = byText(r.group_by);
    document.getElementById("usage-window").textContent = t("teams.usage_window", {
      from: r.start.slice(0, 16).replace("T", " "), to: r.end.slice(0, 16).replace("T", " ") });
    const row = (x, cls) => el("tr", { class: cls, "data-key": x.key }, el("td", { class: "mono" }, cls ? t("teams.total") : x.key),
      el("td", { class: "num gpu-hours" }, x.gpu_hours.toFixed(2)), el("td", { class: "num" }, x.cpu_hours.toFixed(2)),
      el("td", { class: "num" }, String(x.attempts)));
    document.getElementById("usage-body").replaceChildren(...r.rows.map((x) => row(x)), ...(r.rows.length ? [row(r.total, "total")] : []));
    document.getElementById("usage-empty").hidden = r.rows.length > 0;
    document.getElementById("usage-table").dataset.loaded = "1";
  } catch (e) { showError(e); }
}

document.getElementById("usage-form").addEventListener("submit", (ev) => { ev.preventDefault(); loadUsage(); });
for (const input of [usageTeam, usageBy, document.getElementById("usage-from"), document.getElementById("usage-to")])
  input.addEventListener("change", () => { document.getElementById("usage-csv").href = `/api/v2/usage?${usageParams({ format: "csv" })}`; });

const createForm = document.getElementById("team-create");
if (createForm) {
  const inputs = { name: document.getElementById("team-name"), weight: document.getElementById("team-weight"),
    max_gpus: document.getElementById("team-max-gpus"), max_running_tasks: document.getElementById("team-max-running"),
    gpu_hours_month: document.getElementById("team-budget"), quota_bytes: document.getElementById("team-quota") };
  createForm.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const body = { name: inputs.name.value.trim(), ...settingsOf(inputs) };
    for (const k of Object.keys(body)) if (body[k] === null) delete body[k];  // unset: no limit
    act(async () => {
      await api("/api/v2/teams", { method: "POST", body });
      createForm.reset();
    }, inputs);
  });
}

load().then(loadUsage).catch(showError);
