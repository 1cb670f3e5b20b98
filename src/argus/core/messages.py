"""Server messages as a code and parameters, so every client can say them in its own language (issue 37).

A :class:`Message` is ``(code, params, text)``: ``code`` is stable and dotted (``queue.user_gpu_limit``),
``params`` are the values it names, and ``text`` is its English rendering from :data:`EN` — what the API
has always returned, so a script that reads the text keeps working. The WebUI renders ``code`` + ``params``
with its catalogs (``web/i18n/{en,zh}.json``, key ``msg.<code>``; ``static/js/messages.js``) and falls back
to ``text`` for a code it does not know. docs/reference.md lists the codes.

Admission's common refusals are coded the same way: a :class:`~argus.errors.FieldError` built by
:func:`field_error` carries ``code`` (``spec.*``, ``path.*``) and ``params``, its ``message`` rendered from
:data:`EN`, so the English scripts read and the template the WebUI translates cannot drift apart.

The template language is deliberately tiny, and the same here and in ``messages.js``:

* ``{name}`` — the parameter. A number or string is written as is; a **dict** is a nested message (its
  ``code`` key names the template, its other keys are its parameters); a **list** of such dicts is written
  item by item, joined by the catalog's ``sep.<name>`` (else ``sep``), and an empty list as ``none``.
  Lists carry what a language must arrange itself: the free GPUs of each node, what a task needs.
* ``{s:name}`` — ``s`` unless the parameter is 1 (English plurals; other languages leave it out).
* The parameter ``then`` (a list of nested messages) is appended, each after a space: a suffix such as
  ``(priority class urgent)`` that can follow any reason without doubling the codes.

Pure: no I/O, importable from everywhere (core).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from argus.core.failures import FailureKind, hint_for
from argus.errors import FieldError

Param = Any  # str | int | float | dict (a nested message) | list[dict]

# English templates by code. Every code here has msg.<code> in both WebUI catalogs with the same
# placeholders (tests/core/test_messages.py).
EN: dict[str, str] = {
    # --- why a QUEUED task waits (core/scheduling/policy.py, fit.py; scheduler/submit.py) -------------
    "queue.ray_unreachable": "Ray cluster unreachable: {error}",
    "queue.cluster_task_limit": "cluster limit: {max} running task{s:max}",
    "queue.user_task_limit": "user limit: {max} running task{s:max}",
    "queue.team_task_limit": "team limit: {team} runs {max} task{s:max} (its max)",
    "queue.sweep_limit": "sweep limit: {sweep} runs {max} trial{s:max} at a time (its max_concurrent)",
    "queue.user_gpu_limit": "user limit: {held} GPU{s:held} held, this task needs {need} (max {max})",
    "queue.team_gpu_limit": "team limit ({team}): {held} GPU{s:held} held, this task needs {need} (max {max})",
    "queue.user_gpu_never": ("user limit: this task needs {need} GPU{s:need}, more than the user's limit of {max} "
                             "(it cannot start until an admin raises the limit)"),
    "queue.team_gpu_never": ("team limit ({team}): this task needs {need} GPU{s:need}, more than the team's limit "
                             "of {max} (it cannot start until an admin raises the limit)"),
    "queue.user_gpu_first": "user limit: {held} GPU{s:held} held (max {max}); {first} of the same user waits first",
    "queue.team_gpu_first": ("team limit ({team}): {held} GPU{s:held} held (max {max}); {first} of the same team "
                             "waits first"),
    "queue.no_workers": "no worker nodes in the Ray cluster",
    "queue.no_gpus": "0 GPUs in the cluster",
    "queue.cluster_too_small": ("needs {nnodes} node{s:nnodes} × {need}; the cluster has {nodes} "
                                "(waiting for nodes to join)"),
    "queue.gpus_busy": "needs {nnodes} node{s:nnodes} × {need}; free: {free}",
    "queue.gpus_reserved": ("needs {nnodes} node{s:nnodes} × {need}; free: {free} (more GPUs are held back for "
                            "{reserved_for}, ahead in the queue)"),
    "queue.resources_never": ("needs {nnodes} node{s:nnodes} × {need}; the largest worker has {largest} (lower "
                              "cpus_per_node/memory_per_node in the spec, or wait for bigger nodes to join)"),
    "queue.resources_short": "needs {nnodes} node{s:nnodes} × {need}; free: {free}",
    "queue.submitting": "submitting to Ray",
    "queue.previous_attempt": ("waiting for attempt {attempt} to stop: its driver on {host} still reports "
                               "(asked to stop; never two live attempts)"),
    # --- how a QUEUED task's start was estimated, or why it is unknown (core/eta.py) -------------------
    "eta.fits_now": "fits now: the scheduler starts it on its next pass",
    "eta.from_steps": "when running tasks end, estimated from their steps and step rates",
    "eta.beyond_horizon": "unknown: further ahead than the estimate looks (the next {ends} ends of running tasks)",
    "eta.cluster_unreachable": "unknown: the Ray cluster is unreachable",
    "eta.no_worker": "unknown: no worker node in the cluster",
    "eta.never_fits": ("unknown: the cluster cannot hold this task even when empty (it waits for bigger or "
                       "more nodes to join)"),
    "eta.over_gpu_limit": "unknown: it needs more GPUs than the user's limit of {limit}",
    "eta.waits_on_running": ("unknown: it waits on tasks holding resources whose end is unknown (running without "
                             "{key} or a step yet, or not started by Ray yet)"),
    "eta.waits_on_queued": ("unknown: it waits on queued tasks that would start before it, whose run time is "
                            "unknown until they run"),
    "eta.waits_on_both": ("unknown: it waits on tasks holding resources whose end is unknown (running without "
                          "{key} or a step yet, or not started by Ray yet) and on queued tasks that would start "
                          "before it, whose run time is unknown until they run"),
    "eta.nothing_frees": "unknown: nothing the estimate knows of frees what it needs",
    # --- pieces of the reasons above (list items, nested messages, suffixes) -------------------------
    "part.gang": "{nnodes} node{s:nnodes} × {gpus} GPU{s:gpus}",
    "part.gpus": "{n} GPU{s:n}",
    "part.cpus": "{n} CPU{s:n}",
    "part.memory": "{size} memory",
    "part.task": "{task}",
    "part.task_of_class": "{task} of priority class {priority_class}",
    "part.node_lacks": "{node} {gpus} GPU{s:gpus} but {lacks}",
    "part.node_lacks_cpu_job": "{node} {lacks}",
    "part.node_free": "{node} {free}",
    "part.more_nodes": "(+{more} more node{s:more})",
    "part.never_fits": "(more than the cluster holds even empty: waiting for nodes to join)",
    "part.priority_class": "(priority class {priority_class})",
    # --- why a spec's field is refused (core/taskspec.py _field_error; FieldError.code) ----------------
    "spec.unknown_field": "unknown field; allowed fields: {allowed}",
    "spec.unknown_field_did_you_mean": "unknown field; did you mean '{close}'? allowed fields: {allowed}",
    "spec.missing": "required field is missing; add '{field}: {example}'",
    "spec.one_of": "must be one of {choices} or {last}",
    "spec.bound": "must be {op} {limit}",
    "spec.whole_number_range": "must be a whole number from {low} to {high}",
    "spec.whole_number_not_float": "must be a whole number, e.g. 4 (write 1000, not 1e3 or 1000.0)",
    "spec.whole_number": "must be a whole number, e.g. 4",
    "spec.number": "must be a number, e.g. 1e-6",
    "spec.too_long": "is too long (at most {max} characters)",
    "spec.empty": "must not be empty",
    "spec.string": "must be a string",
    "spec.overrides_list": "must be a list of 'key=value' strings",
    "spec.too_many_items": "has too many items (at most {max})",
    "spec.kind": "must be 'basic' (or omitted), 'advanced' or 'eval'",
    "spec.unsafe_string": "must not contain NUL bytes or unpaired surrogate escapes",
    # --- why a path is refused (core/pathrules.py, core/admission.py, verl/check.py, core/example_paths.py) ---
    "path.other_home": ("{at} is in another user's home; use your own files ($HOME/...) and the shared "
                        "$HOME/common/datasets and $HOME/common/hf"),
    "path.other_users_home": ("refers to another user's home ({owner}'s); you may only use your own files "
                              "($HOME/...) and the shared $HOME/common/datasets and $HOME/common/hf"),
    "path.train_outside": ("{at}: training data must be under your home ($HOME/datasets/...), a team folder of "
                           "yours ($HOME/teams/<team>/...) or the shared datasets ($HOME/common/datasets/...)"),
    "path.train_data_outside": ("training data must be under your home ($HOME/datasets/...), a team folder of yours "
                                "($HOME/teams/<team>/...) or the shared datasets ($HOME/common/datasets/...)"),
    "path.train_data_absolute": ("must be an absolute path such as $HOME/datasets/<file>.parquet or "
                                 "$HOME/common/datasets/<file>.parquet"),
    "path.reward_outside": ("{at}: the reward function file must be under $HOME/code/ (or a team's "
                            "$HOME/teams/<team>/code/)"),
    "path.reward_file_outside": ("the reward function file must be under $HOME/code/ (upload it there, e.g. "
                                 "$HOME/code/reward.py)"),
    "path.output_outside": ("{at}: verl writes there, and a task may only write inside your home or your teams' "
                            "folders; use $HOME/jobs/... or a relative path (relative to $HOME/jobs/<task>)"),
    "path.data_root": ("{at} is in the data root but outside your home and the shared folders; use your own files "
                       "($HOME/...) and the shared $HOME/common/datasets and $HOME/common/hf"),
    "path.file_missing": "{path}: file does not exist (upload it first, or check the path)",
    "path.example_files": ("the template's example files are not in your home yet ({paths}): upload your model and "
                           "data first (the Data page, {page}, or SFTP), then set {fields} to them"),
    # --- joining lists --------------------------------------------------------------------------------
    "none": "none",
    "sep": ", ",
    "sep.lacks": " and ",
    "sep.largest": " and ",
}

# Failure hints (core/failures.py) are not templated here: their English is failures.hint_for(kind);
# the code is failure.<kind> and the WebUI catalogs carry msg.failure.<kind> for every FailureKind.
FAILURE_PREFIX = "failure."

_PLACEHOLDER = re.compile(r"\{(s:)?(\w+)\}")


def _scalar(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def render(code: str, params: Mapping[str, Param], catalog: Mapping[str, str] = EN) -> str:
    """``code``'s template from ``catalog`` filled with ``params`` (the rules in the module's docstring)."""
    template = catalog[code]

    def one(m: re.Match[str]) -> str:
        plural, name = m.group(1), m.group(2)
        if name not in params:
            return m.group(0)
        v = params[name]
        if plural:
            return "" if isinstance(v, int | float) and v == 1 else "s"
        if isinstance(v, dict):
            return render(v["code"], v, catalog)
        if isinstance(v, list):
            if not v:
                return catalog["none"]
            return catalog.get(f"sep.{name}", catalog["sep"]).join(render(i["code"], i, catalog) for i in v)
        return _scalar(v)

    text = _PLACEHOLDER.sub(one, template)
    for tail in params.get("then") or ():
        text += " " + render(tail["code"], tail, catalog)
    return text


@dataclass(frozen=True)
class Message:
    """A server message: a stable ``code``, its ``params``, and its English ``text``."""

    code: str
    params: dict[str, Param] = field(default_factory=dict)
    text: str = ""

    def then(self, code: str, **params: Param) -> Message:
        """This message with a suffix appended (``then``), the text rendered again."""
        tails = [*self.params.get("then", []), part(code, **params)]
        return msg(self.code, **{**self.params, "then": tails})

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "params": self.params, "text": self.text}


def msg(code: str, **params: Param) -> Message:
    """The message ``code`` with ``params``, its English text rendered from :data:`EN`."""
    clean = {k: (int(v) if isinstance(v, float) and v.is_integer() else v) for k, v in params.items()}
    return Message(code, clean, render(code, clean))


def field_error(fld: str, value: Any, code: str, /, **params: Param) -> FieldError:
    """A :class:`FieldError` with ``code`` and ``params``, its ``message`` the code's English rendering: the text
    scripts read cannot drift from the template clients translate."""
    m = msg(code, **params)
    return FieldError(fld, value, m.text, code=m.code, params=m.params)


def retext(e: FieldError, change: Callable[[str], str]) -> FieldError:
    """``e`` with ``change`` applied to its message (and to each text parameter, where a path shown in the
    message also is); it keeps its code only while the message is still the code's rendering."""
    text = change(e.message)
    if text == e.message:
        return e
    if e.code is None or e.code not in EN:
        return replace(e, message=text)
    params = {k: change(v) if isinstance(v, str) else v for k, v in e.params.items()}
    if render(e.code, params) != text:
        return replace(e, message=text, code=None, params={})
    return replace(e, message=text, params=params)


def part(code: str, **params: Param) -> dict[str, Param]:
    """A nested message or list item: a dict with its ``code`` beside its parameters."""
    if code not in EN:
        raise KeyError(code)
    return {"code": code, **{k: (int(v) if isinstance(v, float) and v.is_integer() else v) for k, v in params.items()}}


def from_stored(code: str | None, params: Any, text: str | None) -> Message | None:
    """The message stored beside a text column, or None when none was stored or it no longer renders to the
    text (a writer that knows no codes changed the text only: the code would be stale)."""
    if not code or text is None or code not in EN:
        return None
    params = params if isinstance(params, dict) else {}
    if _verified.get((code, text)) != params:  # a page of 500 queued rows repeats a few reasons: render each once
        try:
            ok = render(code, params) == text
        except (KeyError, TypeError, AttributeError):  # parameters of another version's shape
            ok = False
        if not ok:
            return None
        if len(_verified) >= 4096:
            _verified.clear()
        _verified[(code, text)] = params
    return Message(code, params, text)


_verified: dict[tuple[str, str], dict[str, Any]] = {}  # (code, text) → params last seen to render to it


def failure_hint(kind: str | None, hint: str | None) -> Message | None:
    """A failed task's hint as ``failure.<kind>`` with ``where`` (the English prefix naming the rank, worker or
    node, possibly empty), when the stored hint is the kind's generic one (``failures.hint_for``) after that
    prefix; None for a more specific hint (it stays English) or no failure kind."""
    if not kind or not hint or kind not in {k.value for k in FailureKind}:
        return None
    generic = hint_for(FailureKind(kind))
    if not hint.endswith(generic):
        return None
    return Message(FAILURE_PREFIX + kind, {"where": hint[: len(hint) - len(generic)]}, hint)
