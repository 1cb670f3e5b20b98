"""Load a task's custom reward function the way verl does, and say so in the task log.

verl 0.9 no longer prints "using customized reward function …"; the seed's
acceptance test (000 §5.2) looks for that line, and users want to see in the
log *which* file and function a run scored with. The driver calls
``announce_reward(argv)`` before it starts training. Loading mirrors
``verl.utils.import_utils.load_module`` (a spec from the file location, a
module name derived from the absolute path) so a file that loads here loads in
verl. Stdlib only: this runs in the training environment and in the
``argus.jobs.reward_check`` CPU job.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

DEFAULT_NAME = "compute_score"  # verl's default for reward.custom_reward_function.name
_KEY = re.compile(r"^(?:\+\+|\+)?(reward\.)?custom_reward_function\.(path|name)=(.*)$")


def load_reward(path: str, name: str | None = None) -> Callable[..., Any]:
    """Import ``path`` and return its ``name`` (default compute_score); raises what verl would raise."""
    if path.startswith("file://"):
        path = path[len("file://"):]
    if not os.path.exists(path):
        raise FileNotFoundError(f"Custom module file not found: {path!r}")
    spec = importlib.util.spec_from_file_location(f"custom_module_{hash(os.path.abspath(path))}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"Could not load module from {path!r}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn_name = name or DEFAULT_NAME
    if not hasattr(module, fn_name):
        raise AttributeError(f"{path} defines no function {fn_name!r} (set reward.custom_reward_function.name)")
    fn = getattr(module, fn_name)
    if not callable(fn):
        raise TypeError(f"{fn_name!r} in {path} is not callable")
    return fn


def reward_from_argv(argv: Sequence[str]) -> tuple[str, str] | None:
    """(path, name) of the custom reward a verl argv sets, or None. ``reward.*`` wins over the legacy key."""
    if len(argv) == 3 and list(argv[:2]) == ["bash", "-lc"]:
        argv = shlex.split(argv[2].replace("\\\n", " "))  # an advanced task's command
    found: dict[tuple[bool, str], str] = {}
    for arg in argv:
        m = _KEY.match(arg)
        if m:
            found[(bool(m.group(1)), m.group(2))] = m.group(3).strip().strip("'\"")
    for new in (True, False):
        path = found.get((new, "path"))
        if path and path.lower() not in ("null", "none"):
            return path, found.get((new, "name")) or DEFAULT_NAME
    return None


def announce_reward(argv: Sequence[str], out: TextIO | None = None) -> bool:
    """Print the acceptance line for a task's argv; True if a custom reward is set and loads.

    A reward that fails to load is reported (with the exception) and False is
    returned: verl will raise the same error at start-up, so the driver need not stop.
    """
    stream = out or sys.stdout
    found = reward_from_argv(argv)
    if found is None:
        return False
    path, name = found
    try:
        load_reward(path, name)
    except Exception as exc:  # noqa: BLE001 - user code can raise anything; the log says what
        print(f"cannot load customized reward function '{name}' from '{path}': {type(exc).__name__}: {exc}",
              file=stream, flush=True)
        return False
    print(f"using customized reward function '{name}' from '{path}'", file=stream, flush=True)
    return True


if __name__ == "__main__":
    # Started with ``python -I`` (PYTHONPATH ignored, so the user's code/ cannot replace this module);
    # the user's folders go on the path only now, after ours, as the reward's own imports expect.
    sys.path.extend(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    announce_reward(sys.argv[1:])
