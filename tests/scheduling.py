"""How the suite is cut into work units for pytest-xdist, and in which order they are handed out.

``ARGUS_TEST_WORKERS=N scripts/test.sh`` runs ``pytest -n N --dist loadscope`` (the default is one
process: on two cores, two workers starved the e2e and browser units' Ray until tasks timed out),
and tests/conftest.py hands xdist the scheduler below (``UnitScheduling``): the tests of one unit run
on one worker, in collection order. (xdist's own ``loadgroup`` marks a test's group by rewriting
``item._nodeid``, which pytest 9.2 no longer reads: the groups were silently ignored, so the unit is
computed here from the node id instead.) The units:

* **one module, one unit** by default: a module's fixtures (a validator, a live server, a slapd) start
  once, and its tests keep the order they were written in;
* **modules that share one costly resource are one unit** (``SHARED``): the e2e modules that drive the
  session's Ray cluster and Argus server (``tests/e2e/conftest.py``), the browser modules that drive one
  ``argus up`` (``tests/web/conftest.py``). Their fixtures are package-scoped, so the resource stops as
  soon as the worker leaves the package: an idle Ray cluster costs a tenth of a core for the rest of the
  run otherwise;
* **longest first**: xdist hands units out in collection order, so the items are sorted by the unit's
  measured duration (``tests/durations.json``, written by ``scripts/test-durations.py`` from a JUnit
  report). A unit missing from the file (a new module) counts as a short one and runs late; the figures
  only order the queue, they decide nothing else.

Without xdist (the default, ``-n 0``, ``-p no:xdist``) neither the groups nor the order apply: the
package-scoped fixtures still start once, since each package's modules run one after the other.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DURATIONS = Path(__file__).with_name("durations.json")

# unit name → the test files it holds (path prefixes under tests/); every other module is its own unit.
# One of each: a second stack or argus up beside the first costs a Ray cluster's start and its idle CPU.
SHARED: dict[str, tuple[str, ...]] = {
    "e2e-stack": tuple(f"tests/e2e/{m}.py" for m in (
        "test_jail", "test_tasks_on_ray", "test_training_health_on_ray", "test_fairshare_on_ray",
        "test_queue_eta_on_ray", "test_cpu_fit_on_ray", "test_driver_log", "test_log_disk_full",
        "test_envs", "test_gang_on_workers", "test_team_fairshare_on_ray", "test_ray_dashboard",
        "test_templates_on_ray", "test_export_on_ray", "test_resume_on_ray", "test_usage_restart",
        "test_sdk_readme", "test_server_restart", "test_team_folder_on_ray")),
    "web-up": tuple(f"tests/web/{m}.py" for m in (
        "test_browser", "test_browser_admin", "test_browser_logs", "test_browser_new_task_help",
        "test_browser_phone", "test_envs_page", "test_browser_data", "test_browser_charts",
        "test_browser_data_bulk", "test_browser_drafts", "test_browser_tasks_list", "test_browser_teams")),
}

UNKNOWN_S = 5.0  # a module the durations file does not know yet: queued among the short ones


def unit_of(nodeid: str) -> str:
    """The work unit of a test: its shared group, else its module's path."""
    module = nodeid.split("::", 1)[0]
    for unit, prefixes in SHARED.items():
        if module.startswith(prefixes):
            return unit
    return module


def _durations() -> dict[str, float]:
    try:
        return {str(k): float(v) for k, v in json.loads(DURATIONS.read_text()).items()}
    except (OSError, ValueError):
        return {}


def arrange(items: list[pytest.Item]) -> None:
    """Sort the items so that the units come longest first (stable within a unit)."""
    seconds = _durations()
    modules = [item.nodeid.split("::", 1)[0] for item in items]
    units = [unit_of(item.nodeid) for item in items]
    members: dict[str, set[str]] = {}
    for module, unit in zip(modules, units, strict=True):
        members.setdefault(unit, set()).add(module)
    cost = {unit: sum(seconds.get(m, UNKNOWN_S) for m in mods) for unit, mods in members.items()}
    first = {unit: i for i, unit in reversed(list(enumerate(units)))}
    order = sorted(range(len(items)), key=lambda i: (-cost[units[i]], first[units[i]], i))
    items[:] = [items[i] for i in order]


def make_scheduler(config: pytest.Config, log: object) -> object:
    """xdist's load-scope scheduling with ``unit_of`` as the scope (the queue keeps collection order)."""
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return UnitScheduling(config, log)
