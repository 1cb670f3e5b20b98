"""Error types raised by services; adapters map them to transport errors.

Services never raise ``HTTPException``: the API maps these types to status codes
(ClientError→400, Forbidden→403, NotFound→404, Conflict→409) with the body
``{"detail": {"code", "message", "message_code"?, "message_params"?, "errors"?}}``, and the CLI/SFTP map them to
their own vocabulary. ``errors`` carries field-level problems so a user sees
every problem at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class FieldError:
    """One problem with user input: which field, what value, and how to fix it."""

    field: str
    value: Any
    message: str
    # 1-based line of the submitted YAML the problem is on, when it can be found (core/spec_lines.py)
    line: int | None = None
    # The message's fix as an edit a client can apply in one click (issue 25): replace the text ``replace``
    # on the problem's line with ``with`` ("" deletes it). Only where the message names exactly one fix.
    fix: dict[str, str] | None = field(default=None, compare=False)  # a dict: kept out of eq/hash
    # A page of this server where the fix is done (``/data``: upload the files first).
    link: str | None = None
    # The message as a stable code and its parameters (issue 37, core.messages), so a client can say it in its
    # own language; ``message`` is then the code's English rendering (core.messages.field_error builds both).
    # None: the message is English only. Kept out of eq/hash like ``fix`` (a dict).
    code: str | None = field(default=None, compare=False)
    params: dict[str, Any] = field(default_factory=dict, compare=False)

    def as_dict(self) -> dict[str, Any]:
        out = {"field": self.field, "value": _jsonable(self.value), "message": self.message}
        if self.code is not None:
            out["code"] = self.code
            out["params"] = _jsonable(self.params)
        if self.line is not None:
            out["line"] = self.line
        if self.fix is not None:
            out["fix"] = dict(self.fix)
        if self.link is not None:
            out["link"] = self.link
        return out


def _jsonable(value: Any) -> Any:
    """Echo the offending value back in a form strict JSON accepts (NaN/inf, bytes, objects → text)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value[:20]]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in list(value.items())[:20]}
    return str(value)[:200]


@dataclass
class ArgusError(Exception):
    message: str
    code: str = "error"
    errors: list[FieldError] = field(default_factory=list)
    # What the user should also know (a refused spec's deprecated keys): one answer holds everything.
    warnings: list[str] = field(default_factory=list)
    # ``message`` as a stable code and its parameters (issue 37, core.messages.refusal builds all three), so a
    # client can say it in its own language; the API sends them as ``message_code``/``message_params`` beside
    # ``code`` (the kind of refusal scripts branch on). None: the message is English only.
    message_code: str | None = None
    message_params: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.message


class ClientError(ArgusError):
    """The request is invalid (HTTP 400)."""


class Unauthorized(ArgusError):
    """No or bad credentials (HTTP 401)."""


class Forbidden(ArgusError):
    """Authenticated but not allowed (HTTP 403)."""


class NotFound(ArgusError):
    """The thing does not exist, or belongs to someone else (HTTP 404, no existence leak)."""


class Conflict(ArgusError):
    """The request conflicts with the current state (HTTP 409)."""


class QuotaExceeded(ArgusError):
    """A write would exceed the user's storage quota (HTTP 413)."""


class TooManyRequests(ArgusError):
    """Refused for now: too many failed attempts (HTTP 429); the same request later may succeed."""


class Unavailable(ArgusError):
    """A service Argus relies on cannot be reached now, e.g. the LDAP directory (HTTP 503); try again later."""
