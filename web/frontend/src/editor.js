// The New Task editor: CodeMirror 6 with line numbers, YAML highlighting and lint markers; long lines wrap
// (a command's overrides stay in view on a narrow screen, issue 37).
// Bundled by scripts/build-web.sh into src/argus/web/static/vendor/editor.js (an ES module).
// Exposes createEditor(parent, text, onChange) → {get(), set(text), setProblems([{line, severity, message}])}.
import { EditorView, basicSetup } from "codemirror";
import { yaml } from "@codemirror/lang-yaml";
import { setDiagnostics, lintGutter } from "@codemirror/lint";

export function createEditor(parent, text, onChange) {
  const view = new EditorView({
    doc: text,
    parent,
    extensions: [
      basicSetup,
      yaml(),
      lintGutter(),
      EditorView.lineWrapping,
      EditorView.updateListener.of((u) => { if (u.docChanged && onChange) onChange(); }),
    ],
  });
  return {
    view,
    get: () => view.state.doc.toString(),
    set: (t) => view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: t } }),
    setProblems: (problems) => {
      const doc = view.state.doc;
      const diags = [];
      for (const p of problems) {
        if (!p.line || p.line < 1 || p.line > doc.lines) continue;
        const ln = doc.line(p.line);
        diags.push({ from: ln.from, to: ln.to, severity: p.severity || "error", message: p.message });
      }
      view.dispatch(setDiagnostics(view.state, diags));
    },
  };
}
