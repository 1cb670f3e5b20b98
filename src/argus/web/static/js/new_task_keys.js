// verl key completion for the New Task editor (issue 25): as the user types an override key
// (`actor_rollout_ref.actor.ppo_mi`) in the command or the overrides, the editor offers the keys of the
// config verl composes for the spec's workload in its environment (GET /api/v2/verl/keys), with verl's
// default beside each; arrows move, Enter or Tab inserts, Esc closes (CodeMirror's completion keymap).
//
// The vendored bundle exports only createEditor (it cannot be rebuilt offline), so the completion
// source is added to the running editor through CodeMirror's public statics reached from its view:
// EditorState.languageData (the "autocomplete" data that basicSetup's autocompletion() reads) and
// StateEffect.appendConfig (from the StateEffect class of EditorView.scrollIntoView's effect).
import { api } from "./common.js";

const cache = new Map(); // "workload|env" -> Promise of the key list

function keysFor(workload, env) {
  const id = `${workload}|${env || ""}`;
  if (!cache.has(id)) {
    const q = new URLSearchParams({ workload });
    if (env) q.set("env", env);
    const p = api(`/api/v2/verl/keys?${q}`).then((r) => r.keys || []).catch(() => []).then((keys) => {
      if (!keys.length) cache.delete(id); // none yet (validator starting, unknown env): asked again next time
      return keys;
    });
    cache.set(id, p);
  }
  return cache.get(id);
}

function shownDefault(k) {
  if (k.default === null || k.default === undefined) return "null";
  const s = typeof k.default === "string" ? k.default : JSON.stringify(k.default);
  return s.length > 40 ? `${s.slice(0, 39)}…` : s;
}

/** The key being typed before the cursor: a word of dotted names not yet followed by `=`, outside comments. */
function typedKey(context) {
  const line = context.state.doc.lineAt(context.pos);
  const before = line.text.slice(0, context.pos - line.from);
  if (before.includes("#")) return null;
  const m = /(?:^|[\s'"])(?:\+{0,2}|~)([A-Za-z_][\w.]*)$/.exec(before); // a value (`key=va`) never matches
  if (!m) return null;
  const word = m[1];
  if (!word.includes(".") && !context.explicit) return null; // YAML's own keys are undotted: only on Ctrl+Space
  return { from: context.pos - word.length, word };
}

/**
 * Add verl key completion to `editor` (from vendor/editor.js). `specOf()` gives {workload, env} of the
 * text now; `t` translates the deprecated note.
 */
export function installKeyCompletion(editor, specOf, t) {
  const view = editor.view;
  const EditorState = view.state.constructor;
  const StateEffect = view.constructor.scrollIntoView(0).constructor;
  const source = async (context) => {
    const at = typedKey(context);
    if (!at) return null;
    const { workload, env } = specOf();
    const keys = await keysFor(workload, env);
    if (!keys.length) return null;
    return {
      from: at.from,
      validFor: /^[\w.]*$/,
      options: keys.map((k) => ({
        label: k.key,
        type: "property",
        detail: k.deprecated ? `= ${shownDefault(k)} · ${t("new.key_deprecated")}` : `= ${shownDefault(k)}`,
        info: k.deprecated && k.use ? t("new.key_use", { key: k.use }) : null,
        boost: k.deprecated ? -50 : 0,
        apply: (v, _c, from, to) => v.dispatch({ changes: { from, to, insert: k.key },
                                                 selection: { anchor: from + k.key.length } }),
      })),
    };
  };
  view.dispatch({ effects: StateEffect.appendConfig.of(
    EditorState.languageData.of(() => [{ autocomplete: source }])) });
  // basicSetup binds Enter to accept; Tab too, as editors commonly do (otherwise it leaves the editor).
  // The bundle exports no acceptCompletion: the selected option is picked as a click picks it (mousedown).
  view.dom.addEventListener("keydown", (ev) => {
    if (ev.key !== "Tab" || ev.shiftKey || ev.ctrlKey || ev.altKey || ev.metaKey) return;
    const selected = view.dom.querySelector(".cm-tooltip-autocomplete li[aria-selected]");
    if (!selected) return;
    ev.preventDefault();
    ev.stopPropagation();
    selected.dispatchEvent(new MouseEvent("mousedown", { bubbles: true, cancelable: true, button: 0 }));
  }, true);
  const warmed = new Set(); // prefetched once per workload and environment; typing asks again if that failed
  return {
    warm: () => {
      const { workload, env } = specOf();
      const id = `${workload}|${env || ""}`;
      if (!warmed.has(id)) { warmed.add(id); keysFor(workload, env); }
    },
  };
}
