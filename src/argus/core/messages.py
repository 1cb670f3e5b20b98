"""Server messages as a code and parameters, so every client can say them in its own language (issue 37).

A :class:`Message` is ``(code, params, text)``: ``code`` is stable and dotted (``queue.user_gpu_limit``),
``params`` are the values it names, and ``text`` is its English rendering from :data:`EN` — what the API
has always returned, so a script that reads the text keeps working. The WebUI renders ``code`` + ``params``
with its catalogs (``web/i18n/{en,zh}.json``, key ``msg.<code>``; ``static/js/messages.js``) and falls back
to ``text`` for a code it does not know. docs/reference.md lists the codes.

Admission's common refusals are coded the same way: a :class:`~argus.errors.FieldError` built by
:func:`field_error` carries ``code`` (``spec.*``, ``path.*``) and ``params``, its ``message`` rendered from
:data:`EN`, so the English scripts read and the template the WebUI translates cannot drift apart.
A refusal as a whole (an :class:`~argus.errors.ArgusError`: what the Account, Admin and Teams pages are refused —
a wrong password, a team rule, a limit) is built by :func:`refusal`: its ``message`` rendered from :data:`EN`, and
``message_code``/``message_params`` sent beside the API's ``code`` in the error's ``detail``. A request the API's
schema refuses says ``request.invalid``, each field's pydantic error coded ``request.<type>`` only where the
template renders to exactly pydantic's English.

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
from typing import Any, TypeVar

from argus.core.failures import FailureKind, hint_for
from argus.errors import ArgusError, FieldError

Param = Any  # str | int | float | dict (a nested message) | list[dict]
E = TypeVar("E", bound=ArgusError)

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
    # --- account, teams, admin: what the Account, Teams and Admin pages are refused (services/users.py, -----
    # logins.py, teams.py, usage.py; api/app.py for a request the API's schema refuses). A name the English
    # quotes ('bob') is passed quoted, as Python's repr wrote it, so the text stays what it always was.
    "name.rule": "must match ^[a-z][a-z0-9_-]{1,31}$ (lowercase letter first, 2–32 chars)",
    "user.name_invalid": "invalid user name",
    "user.not_found": "no user named {user}",
    "user.exists": "user {user} already exists",
    "user.self_disable": "you cannot disable your own account",
    "user.self_disable_field": "is your own account; another administrator must disable it",
    "user.limits_invalid": "invalid limits",
    "user.limit_unknown": "unknown limit; the limits are {limits}",
    "user.limit_range": "must be a whole number from 1 to {max}, or null for the platform default",
    "token.not_found": "user {user} has no token {token}",
    "password.current_required": "current password required",
    "password.current_required_field": ("send your current password (the one you sign in and use SFTP with); "
                                        "forgot it? ask an administrator to reset it"),
    "password.wrong_current": "wrong current password",
    "password.wrong_current_field": "is not your current password; forgot it? ask an administrator to reset it",
    "password.directory_user": "{user} signs in with the directory (LDAP): change the password there, not in Argus",
    "password.directory_user_field": ("is kept by your organisation's directory (LDAP); change it with your "
                                      "directory's own tools"),
    "password.too_short": "password too short",
    "password.too_short_field": "must be a string of at least {min} characters",
    "password.too_long": "password too long",
    "password.too_long_field": "must be at most {max} bytes (UTF-8); use a shorter passphrase or an SSH key",
    "password.throttled": "too many wrong passwords from your address; wait a minute and try again",
    "key.missing": "missing key",
    "key.missing_field": "paste one OpenSSH public key line",
    "key.invalid": "invalid public key",
    "key.invalid_field": "not an OpenSSH public key ({error}); paste e.g. the contents of ~/.ssh/id_ed25519.pub",
    "key.exists": "key already added",
    "key.not_found": "no key {key}",
    "team.name_invalid": "invalid team name",
    "team.role_invalid": "invalid team role",
    "team.role_rule": "must be one of: member, admin",
    "team.settings_invalid": "invalid team settings",
    "team.weight_rule": ("must be a number > 0 and ≤ {max} (1 is the default share; 2 gets twice the share under "
                         "contention)"),
    "team.limit_rule": "must be a whole number ≥ 0, or null for no limit",
    "team.budget_rule": "must be a number of GPU-hours ≥ 0, or null for no budget",
    "team.setting_unknown": "is not a team setting; use weight, {settings}",
    "team.not_found": "no team named {team}",
    "team.not_yours": "you are not in a team named {team}",
    "team.name_yours": "name one of your teams (argus team list)",
    "team.create_admins_only": "only administrators create teams",
    "team.change_admins_only": "only administrators change a team's weight, quotas and budget",
    "team.delete_admins_only": "only administrators delete teams",
    "team.exists": "team {team} already exists",
    "team.name_taken": "is taken; choose another name",
    "team.members_admins_only": "only the admins of team {team} manage its members",
    "team.last_admin": "team {team} would have no team admin",
    "team.last_admin_field": ("is the team's last admin; make another member an admin first (or ask a site "
                              "administrator)"),
    "team.enrol_refused": ("a team admin adds only people already in another team they administer: ask a site "
                           "administrator to add {user} to team {team}"),
    "team.enrol_refused_field": "not in a team you administer; a site administrator adds them",
    "team.already_member": "{user} is already in team {team}",
    "team.already_member_field": "is a member already; change their role instead",
    "team.not_member": "{user} is not in team {team}",
    "team.not_member_field": "is not a member of this team",
    "usage.window_invalid": "bad usage window",
    "usage.when_rule": "must be a date (2026-11-01) or an ISO 8601 time (2026-11-01T08:00:00Z)",
    "usage.from_before_to": "must be before 'to' ({to})",
    "usage.grouping_invalid": "bad grouping",
    "usage.group_rule": "must be one of {groups}",
    "usage.others_admins_only": "only admins can see another user's usage",
    # a request the API's schema refuses (pydantic's own English, coded only where it renders to exactly that)
    "request.invalid": "request is invalid",
    "request.missing": "Field required",
    "request.extra_forbidden": "Extra inputs are not permitted",
    "request.int_parsing": "Input should be a valid integer, unable to parse string as an integer",
    "request.int_from_float": "Input should be a valid integer, got a number with a fractional part",
    "request.int_type": "Input should be a valid integer",
    "request.float_parsing": "Input should be a valid number, unable to parse string as a number",
    "request.float_type": "Input should be a valid number",
    "request.string_type": "Input should be a valid string",
    "request.bool_type": "Input should be a valid boolean",
    "request.bool_parsing": "Input should be a valid boolean, unable to interpret input",
    "request.greater_than_equal": "Input should be greater than or equal to {ge}",
    "request.less_than_equal": "Input should be less than or equal to {le}",
    "request.greater_than": "Input should be greater than {gt}",
    "request.less_than": "Input should be less than {lt}",
    "request.string_too_long": "String should have at most {max_length} character{s:max_length}",
    # the Account page's notification channels (services/notifications.py; a webhook URL's own problem stays English)
    "notify.channel_invalid": "invalid notification channel",
    "notify.kind_rule": "must be 'webhook' (a URL) or 'email' (an address)",
    "notify.email_disabled": ("e-mail notifications are off on this server: the operator has not set smtp_host "
                              "(ARGUS_SMTP_HOST); use a webhook, or ask the operator to configure SMTP"),
    "notify.target_missing": "give the webhook's URL or the e-mail address",
    "notify.email_invalid": "not an e-mail address: write it as name@example.com (no display name, no spaces)",
    "notify.events_list": "a non-empty list of events, or leave it out for all: {events}",
    "notify.event_unknown": "unknown event; one of {events}",
    "notify.too_many_channels": "too many notification channels",
    "notify.too_many_channels_field": "you have {count} channels, the most allowed; remove one first",
    "notify.channel_not_found": "no notification channel {channel}",
    "notify.too_many_tests": "too many test notifications: at most {limit} in {window} s; try again in {seconds} s",
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


def refusal(kind: type[E], api_code: str, code: str, /, *, errors: list[FieldError] | None = None,
            **params: Param) -> E:
    """An :class:`~argus.errors.ArgusError` of ``kind`` whose ``message`` is ``code``'s English rendering, with
    ``message_code``/``message_params`` beside it (the API sends them next to ``code``, here ``api_code``: the
    kind of refusal scripts branch on, unchanged)."""
    m = msg(code, **params)
    return kind(m.text, code=api_code, errors=list(errors or ()), message_code=m.code, message_params=m.params)


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
