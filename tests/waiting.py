"""The suite's one way to wait for something: poll a check until it holds, or fail saying what never came.

Why one helper: a hand-written ``while ...: time.sleep(x)`` loop either sleeps longer than needed (a
fixed ``sleep(4)`` "to be sure") or forgets its deadline and hangs until pytest-timeout kills the whole
module. ``wait_until`` returns as soon as the check holds (first look immediately, then every ``every``
seconds), and on time-out raises an ``AssertionError`` that names what was awaited and the last value
seen, so a failure under load reads like any other assertion.

A check that raises (an ``assert`` inside it, a task that ended in the wrong state) fails the test at
once: there is no point polling for a state that can no longer come. Pass ``ignore=`` for exceptions
that only mean "not yet" (a server still starting refuses connections).

Timeouts are generous on purpose: they bound a hang, they are not a speed assertion (the guide's
rule 5). Where a test needed a longer one under load, its call site says why.

``SLACK`` stretches every wait of a process that runs at a lower CPU priority: the xdist light lane
(tests/scheduling.py) runs at nice 10 beside a Ray unit and then gets a tenth of a contended core, so a
wait that bounds a hang at full speed must be longer there. ``slack(s)`` applies it to the waits that
are not ``wait_until`` (an HTTP client's read time-out, ``Popen.wait``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

SLACK = 1.0  # set by tests/conftest.py's pytest_configure on the light lane (scheduling.LIGHT_SLACK)


def slack(seconds: float) -> float:
    """``seconds`` as this process must wait them: stretched by ``SLACK`` where it runs at a lower priority."""
    return seconds * SLACK


def wait_until(check: Callable[[], T], timeout: float = 30.0, *, every: float = 0.1,
               what: str | Callable[[], str] = "", ignore: tuple[type[BaseException], ...] = ()) -> T:
    """Call ``check()`` until it returns something truthy and return that; fail after ``timeout`` s.

    ``what`` (text, or a function giving it, called only on failure) says what was awaited: it is the
    failure message together with the last value ``check`` returned. Exceptions in ``ignore`` count as
    "not yet"; any other exception propagates at once.
    """
    timeout = slack(timeout)
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            last = check()
            if last:
                return last
        except ignore as e:  # "not yet": the thing waited for is still coming up
            last = e
        if time.monotonic() >= deadline:
            said = what() if callable(what) else what
            raise AssertionError(f"waited {timeout:g} s for {said or getattr(check, '__name__', 'a check')}; "
                                 f"last: {last!r}"[:4000])
        time.sleep(every)
