"""How the suite is cut into work units for pytest-xdist, and which worker runs which.

``scripts/test.sh`` runs ``pytest -n 2 --dist loadscope`` (``ARGUS_TEST_WORKERS``; 0 runs one process), and
tests/conftest.py hands xdist the scheduler below (``UnitScheduling``): the tests of one unit run on one
worker, in collection order. (xdist's own ``loadgroup`` marks a test's group by rewriting ``item._nodeid``,
which pytest 9.2 no longer reads: the groups were silently ignored, so the unit is computed here from the
node id instead.) The units:

* **one module, one unit** by default: a module's fixtures (a validator, a live server, a slapd) start
  once, and its tests keep the order they were written in;
* **modules that share one costly resource are one unit** (``SHARED``): the e2e modules that drive the
  package's Ray cluster and Argus server (``tests/e2e/conftest.py``), the browser modules that drive one
  ``argus up`` (``tests/web/conftest.py``). Their fixtures are package-scoped, so the resource stops as
  soon as the worker leaves the package: an idle Ray cluster costs a tenth of a core otherwise.

**Two lanes.** The suite is CPU-bound on this project's 2-core machines (measured: 70–95 % of both cores
while a Ray or browser unit runs, ~50 % — one core, the pytest process — while an in-process unit runs),
and two Ray or browser units side by side starved each other's Ray until tasks timed out. So the units
that start a Ray cluster, an ``argus up`` or Chromium (``HEAVY``) all run on one worker, ``gw0``, one after
the other, as they would in one process; every other worker runs the light units (the API, services,
SFTP, validator… tests) at a lower CPU priority (``LIGHT_NICE``), in the time the heavy lane leaves
idle. When no heavy unit is left, ``gw0`` takes light ones too; a light worker takes a heavy one only when
it has run out of light ones, and only one that brings its own `argus up` or cluster (``SELF_CONTAINED``).

**Longest first**: xdist hands units out in queue order, so the items are sorted by the unit's measured
duration (``tests/durations.json``, written by ``scripts/test-durations.py`` from a JUnit report). A unit
missing from the file (a new module) counts as a short one and runs late; the figures only order the
queue, they decide nothing else.

Without xdist (``ARGUS_TEST_WORKERS=0``, ``-p no:xdist``) neither the lanes nor the order apply: the
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
        "test_sdk_readme", "test_server_restart", "test_team_folder_on_ray", "test_rl_cpu_on_ray",
        "test_noisy_neighbours", "test_sweeps_on_ray", "test_pipelines_on_ray")),
    "web-up": tuple(f"tests/web/{m}.py" for m in (
        "test_browser", "test_browser_admin", "test_browser_logs", "test_browser_new_task_help",
        "test_browser_phone", "test_envs_page", "test_browser_data", "test_browser_charts",
        "test_browser_data_bulk", "test_browser_drafts", "test_browser_tasks_list", "test_browser_teams",
        "test_browser_logs_server", "test_browser_task_states", "test_browser_polish", "test_browser_new_task_round4",
        "test_browser_messages", "test_browser_sweeps", "test_browser_pipelines_models",
        "test_browser_account_messages")),
}

# The units that start a Ray cluster, an ``argus up`` or Chromium (path prefixes under tests/): on two cores one
# of them uses more than a core, and two at once starved each other's Ray until tasks timed out. They all
# run on the heavy lane; tests/conftest.py refuses a module marked e2e or browser that is not listed here.
HEAVY: tuple[str, ...] = ("tests/e2e/", "tests/cluster/", "tests/web/test_browser", "tests/web/test_envs_page.py",
                          "tests/test_server_start.py")
# Heavy units that start all they need themselves (their own `argus up` or cluster, not the package's stack):
# once the light lane has run out of light units, its worker takes these, at its lower priority, beside the
# heavy lane's tail instead of idling for its last ten minutes. The cluster modules start their own Ray
# (tests/cluster/conftest.py), and its start is built for a loaded machine (retries, a load-stretched budget):
# measured, the light lane ran out at ~28 min and idled while the heavy lane ran to ~37.
SELF_CONTAINED: tuple[str, ...] = ("tests/e2e/test_training_continuity.py", "tests/e2e/test_up_restart.py",
                                   "tests/e2e/test_two_up.py", "tests/e2e/test_hostile_up.py",
                                   "tests/test_server_start.py", "tests/cluster/")
HEAVY_LANE = "gw0"  # the xdist worker that runs the heavy units; every other worker runs light ones
LIGHT_NICE = 10  # the light lane's niceness: it gets what the heavy lane leaves (a tenth of a contended core)
# How much longer the light lane's waits are (tests/waiting.py's SLACK): on CI a dry run through verl took more
# than the 30 s an HTTP client waited, and an SFTP test server more than 20 s to stop, beside a Ray unit.
LIGHT_SLACK = 4.0

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


def heavy(unit: str) -> bool:
    """Whether a unit runs a Ray cluster, an ``argus up`` or Chromium (``HEAVY``): one such unit at a time."""
    return any(m.startswith(HEAVY) for m in SHARED.get(unit, (unit,)))


def make_scheduler(config: pytest.Config, log: object) -> object:
    """xdist's load-scope scheduling with ``unit_of`` as the scope, in two lanes (the module's docstring)."""
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

        def _assign_work_unit(self, node) -> None:  # noqa: ANN001 - xdist's WorkerController
            """The first queued unit of the node's lane: the heavy lane (``gw0``) takes heavy units, then
            light ones once no heavy one is left; any other worker takes light units, then self-contained
            heavy ones (``SELF_CONTAINED``) once no light one is left."""
            lane_heavy = node.gateway.id == HEAVY_LANE or len(self.nodes) == 1
            pick = next((scope for scope in self.workqueue if not heavy(scope)), None)
            if lane_heavy:
                pick = next((scope for scope in self.workqueue if heavy(scope)), pick)
            elif pick is None:
                pick = next((scope for scope in self.workqueue if scope.startswith(SELF_CONTAINED)), None)
            if pick is None:  # only heavy units are left, and they are the heavy lane's
                return
            self.workqueue.move_to_end(pick, last=False)
            super()._assign_work_unit(node)

        def _reschedule(self, node) -> None:  # noqa: ANN001 - xdist's WorkerController
            """As xdist's, but a light worker with nothing left of its lane stops rather than waits."""
            if not node.shutting_down and self.workqueue and self._pending_of(self.assigned_work[node]) <= 2:
                self._assign_work_unit(node)
                if not self._pending_of(self.assigned_work[node]):
                    node.shutdown()
                return
            super()._reschedule(node)

    return UnitScheduling(config, log)
