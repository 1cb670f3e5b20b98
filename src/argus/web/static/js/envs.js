// Environments page: GET /api/v2/envs, the training environments a spec can name in `env:` (the
// cluster's and the user's own ~/envs/<name>), what each holds and whether its last check passed.
// Read-only: building, registering and removing them is the CLI's (`argus env …`).
import { api, el, fmtTime, poll, t } from "./common.js";
import { envDescription, envNotes, errorMessage } from "./messages.js";

const errorBox = document.getElementById("envs-error");

function list(items) {
  return items && items.length ? items.join(", ") : el("span", { class: "muted" }, t("envs.none"));
}

function torch(env) {
  if (!env.torch) return "—";
  return el("span", {}, env.torch, " ",
    el("span", { class: "badge" }, env.torch_cuda ? t("envs.cuda", { version: env.torch_cuda }) : t("envs.cpu")));
}

function status(env) {
  if (env.ok) return el("span", { class: "badge st-succeeded", "data-ok": "1" }, t("envs.ok"));
  return el("div", {},
    el("span", { class: "badge st-failed", "data-ok": "0" }, t("envs.failed")),
    el("ul", { class: "env-problems" }, (env.problems.length ? env.problems : [t("envs.not_checked")]).map((p) => el("li", {}, p))));
}

function source(env) {
  if (env.catalog) return t("envs.from_catalog", { entry: env.catalog });
  if (env.source === "builtin") return t("envs.source_builtin");
  if (env.source === "registered") return t("envs.source_registered");
  if (env.source === "requirements") return t("envs.source_requirements");
  return env.source;
}

function row(env, dflt) {
  const details = [env.python_version && `Python ${env.python_version}`, env.ray && `Ray ${env.ray}`,
    env.transformers && `transformers ${env.transformers}`].filter(Boolean).join(" · ");
  return el("tr", { "data-env": env.name },
    el("td", { class: "name" }, el("span", { class: "mono" }, env.name),
      env.name === dflt ? el("span", { class: "badge default-badge" }, t("envs.default")) : null,
      env.owner ? el("div", { class: "hint" }, t("envs.yours")) : null,
      el("div", { class: "hint" }, source(env)),
      details ? el("div", { class: "hint" }, details) : null),
    el("td", { class: "mono verl" }, env.verl || "—"),
    el("td", { class: "mono" }, torch(env)),
    el("td", {}, list(env.rollout_engines)),
    el("td", {}, list(env.kernels)),
    el("td", { class: "templates", "data-templates": env.templates ? "1" : "0" }, env.templates ? t("envs.yes") : t("envs.no")),
    el("td", { class: "status" }, status(env)),
    el("td", { class: "desc" }, envDescription(env),
      envNotes(env).map((n) => el("div", { class: "hint" }, n))),
    el("td", { title: env.checked_at || "" }, fmtTime(env.checked_at)));
}

async function load() {
  try {
    const view = await api("/api/v2/envs");
    errorBox.hidden = true;
    document.getElementById("envs-default").textContent = t("envs.default_is", { name: view.default });
    document.getElementById("envs-body").replaceChildren(...view.environments.map((e) => row(e, view.default)));
    document.getElementById("envs-empty").hidden = view.environments.length > 0;
  } catch (e) {
    errorBox.hidden = false;
    errorBox.textContent = errorMessage(e);
  }
  document.body.dataset.loaded = "1";
}

// Environments change only when an admin builds or registers one: a slow refresh is enough.
poll(load, 30000).now();
