// The model registries (issue 38): GET /api/v2/models (your models and your teams', each with its `team` and `ref`)
// or GET /api/v2/models/{ref} (its versions: kind, path, the task and step it came from, who registered it, its
// scores, aliases and a line of its lineage — environment, verl, hashed files — in full in the row's tooltip; a team
// version its team cannot read carries the API's hint), and the alias form → PUT …/aliases/{alias}. What may be
// moved where is the API's to say (`can_move_aliases`; a refusal shows its message).
import { api, el, fmtTime, page, sayResult, t } from "./common.js";
import { errorMessage } from "./messages.js";

// A reference in a URL path: each part encoded, the team's "/" kept (GET /api/v2/models/{ref:path}).
const inPath = (ref) => ref.split("/").map(encodeURIComponent).join("/");

const errorBox = document.getElementById("models-error");

function fail(e) {
  errorBox.textContent = errorMessage(e);
  errorBox.hidden = false;
}

function scores(s) {
  if (!s) return "—";
  const all = Object.entries(s);
  const core = all.filter(([k]) => k.startsWith("val-core/"));
  return (core.length ? core : all).map(([k, v]) => el("div", { class: "mono" }, `${k} = ${Number(v).toPrecision(4)}`));
}

async function loadList() {
  try {
    const all = await api("/api/v2/models");
    errorBox.hidden = true;
    document.getElementById("models-body").replaceChildren(...all.map((m) => el("tr", { "data-model": m.ref },
      el("td", {}, el("a", { href: `/models/${inPath(m.ref)}`, class: "mono" }, m.ref)),
      el("td", { class: m.team ? "mono" : "hint" }, m.team || t("models.team_own")),
      el("td", { class: "num" }, String(m.versions)), el("td", { class: "num" }, String(m.latest)),
      el("td", { class: "mono" }, Object.entries(m.aliases).map(([a, v]) => `@${a} → ${v}`).join(", ")))));
    document.getElementById("models-empty").hidden = all.length > 0;
  } catch (e) { fail(e); }
}

async function loadOne(name) {
  let m;
  try {
    m = await api(`/api/v2/models/${inPath(name)}`);
    errorBox.hidden = true;
  } catch (e) { fail(e); return; }
  document.getElementById("model-title").textContent = m.ref;
  document.getElementById("versions-body").replaceChildren(...m.versions.slice().reverse().map((v) => {
    const lin = v.lineage || {};
    return el("tr", { "data-version": v.version, title: JSON.stringify(lin.files || []) },
      el("td", { class: "mono" }, String(v.version)), el("td", {}, v.kind),
      el("td", { class: "mono", "data-shared": v.shared ? "1" : "0" }, v.path,
        v.hint ? el("div", { class: "hint" }, v.hint) : ""),
      el("td", {}, v.source_task ? el("a", { href: `/tasks/${encodeURIComponent(v.source_task)}`, class: "mono" },
        v.source_task) : "—", v.step !== null ? ` step ${v.step}` : ""),
      el("td", {}, v.registered_by),
      el("td", {}, scores(v.scores)),
      el("td", { class: "mono aliases" }, v.aliases.map((a) => `@${a}`).join(", ")),
      el("td", { class: "hint" }, lin.task ? t("models.lineage", { env: lin.env || "—", verl: lin.verl || "—",
        files: (lin.files || []).filter((f) => f.sha256).length }) : "—"),
      el("td", {}, fmtTime(v.created_at)));
  }));
  const select = document.getElementById("alias-version");
  select.replaceChildren(...m.versions.slice().reverse().map((v) => el("option", { value: v.version }, String(v.version))));
  document.getElementById("alias-move").disabled = !m.can_move_aliases;
  document.getElementById("alias-admins").hidden = m.can_move_aliases;
  document.getElementById("model-one").dataset.loaded = "1";
}

if (page.model) {
  loadOne(page.model);
  document.getElementById("alias-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const alias = document.getElementById("alias-name").value.trim();
    const version = Number(document.getElementById("alias-version").value);
    const result = document.getElementById("model-result");
    try {
      await api(`/api/v2/models/${inPath(page.model)}/aliases/${encodeURIComponent(alias)}`,
        { method: "PUT", body: { version } });
      sayResult(result, true, t("models.alias_moved", { name: page.model, alias, version }));
    } catch (e) { sayResult(result, false, errorMessage(e)); }
    loadOne(page.model);
  });
} else {
  loadList();
}
