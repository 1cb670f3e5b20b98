"""A CPU-time budget for the head's checks of user input (reward dry-run, verl validator requests).

A deadline on the clock refuses good specs on a busy head: an import of ``transformers`` or ``verl`` needs a few
seconds of CPU, which a loaded 2-core head stretches past 30 or 60 s of wall time (measured: 21-33 s for a reward,
89 s for a validator's first answer). What tells a broken check from a slow one is the CPU the check itself
uses, so :class:`CpuBudget` watches a child's process tree and says why to stop it:

* it used more than its budget of CPU (a loop);
* it used no CPU for as long as its budget (a sleep, a lock, a network wait: a hang);
* ``WALL_CAP`` times the budget went by on the clock, which bounds how long a submit waits whatever the load.
"""

from __future__ import annotations

import time

import psutil

WALL_CAP = 10


class CpuBudget:
    """The budget of one call of a child process (its tree: bwrap, then the interpreter), from now on."""

    def __init__(self, pid: int, budget_s: float) -> None:
        self.pid = pid
        self.budget_s = budget_s
        self.started = self.progressed = time.monotonic()
        self.base = self.used = tree_cpu_s(pid)  # a warm validator's earlier requests do not count

    def overrun(self) -> str | None:
        """Why the call must stop now, or None while it is within its budget."""
        now = time.monotonic()
        cpu = tree_cpu_s(self.pid)
        if cpu > self.used:
            self.used, self.progressed = cpu, now
        spent = self.used - self.base
        if spent > self.budget_s:
            return f"used more than {self.budget_s:g} s of CPU (a loop?)"
        if now - self.progressed > self.budget_s:
            return f"used no CPU for {self.budget_s:g} s (it waits on something: a sleep, a lock, the network?)"
        if now - self.started > WALL_CAP * self.budget_s:
            return f"did not finish in {WALL_CAP * self.budget_s:g} s ({spent:.1f} s of CPU: the head is very busy)"
        return None


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) used so far by ``pid`` and its descendants, reaped ones included."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total
