"""A log line as the WebUI shows it, and the search over such lines (issue 25, "Logs"): pure rules.

The page renders ANSI colours and collapses tqdm's carriage-return redraws (static/js/logview.js);
a search over the whole log on the server must match what the user *sees*, not the escape bytes in
between, so both sides strip escapes and keep the last carriage-return segment the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from argus.errors import ClientError, FieldError

# CSI (ESC [ params final), OSC (ESC ] … BEL or ESC \), a 2-byte escape, or a lone ESC — as logview.js ESCAPE
ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_]|)")
MAX_QUERY = 500


# What ``argus logs`` lets through to a terminal (issue 33): colours (SGR, ``ESC [ … m``) and only on a TTY;
# every other C0 control but tab, newline and carriage return (tqdm's redraws), DEL and the C1 controls are
# shown as ``\xNN`` text, so a log cannot set the title, write the clipboard (OSC 52) or clear the screen
TERMINAL = re.compile(r"(\x1b\[[0-9;]*m)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # group 1: a colour (SGR)


def terminal_safe(text: str, *, colours: bool) -> str:
    """``text`` as it may reach a terminal: colour sequences kept if ``colours`` (else dropped), every other
    escape sequence and control character written out as text rather than obeyed."""
    def shown(m: re.Match[str]) -> str:
        if m.group(1):
            return m.group(1) if colours else ""
        return f"\\x{ord(m.group()):02x}"

    return TERMINAL.sub(shown, text)


def visible(line: str) -> str:
    """``line`` (without its newline) as the page shows it: the last ``\\r`` redraw, escapes removed."""
    line = line.rstrip("\r")
    if "\r" in line:
        line = line.rpartition("\r")[2]
    return ESCAPE.sub("", line) if "\x1b" in line else line


@dataclass(frozen=True)
class LineSearch:
    """A compiled query: ``match(visible_text)`` → whether the line matches. Plain text ignores case (like
    the page's search); a regex is Python's ``re`` (for the usual subset the same as JavaScript's)."""

    query: str
    regex: bool
    match: Callable[[str], bool]
    # for a regex: does it match anywhere in a block of lines (escapes removed, no carriage returns)? False
    # means no line of the block matches, so the block is skipped without a per-line loop
    in_block: Callable[[str], bool] | None = None


def line_search(query: str, regex: bool) -> LineSearch:
    """Compile the user's query, naming the field, the value and the fix when it cannot be used."""
    if not query:
        raise ClientError("the search text is empty", code="invalid_query",
                          errors=[FieldError("q", query, "type the text (or regular expression) to find")])
    if len(query) > MAX_QUERY or "\n" in query:
        raise ClientError("the search text is too long or has a newline", code="invalid_query",
                          errors=[FieldError("q", query[:80], f"one line of at most {MAX_QUERY} characters")])
    if regex:
        try:
            pattern = re.compile(query)
        except re.error as e:
            raise ClientError(f"not a valid regular expression: {e}", code="invalid_query",
                              errors=[FieldError("q", query, f"fix the regular expression ({e}) or search as plain "
                                                             "text (regex=false)")]) from None
        block = re.compile(query, re.MULTILINE)
        return LineSearch(query, True, lambda text: pattern.search(text) is not None,
                          lambda text: block.search(text) is not None)
    needle = query.casefold()
    return LineSearch(query, False, lambda text: needle in text.casefold())
