"""A multi-node task's other nodes: one sandbox each, joined to the task's private Ray (issue 21).

The launcher (:mod:`argus.launcher.driver`) runs on the task's first node and holds that
node's share; its sandbox runs the private Ray head and the command. For nodes 2..N it
asks the platform's Ray for a placement group of N-1 bundles, each the task's per-node
share (GPUs, CPUs, memory, one ``worker_node``), ``STRICT_SPREAD`` and never on the first
node (a label selector on ``ray.io/node-id``), so the task gets N distinct machines as
the scheduler counted. In each bundle a :class:`NodeSandbox` actor — platform code, on the
platform's Ray — starts that node's sandbox, whose ``private_ray.py --join`` adds the node
to the task's cluster with the task's token; the head waits for all N before the command
starts, so verl sees every GPU of the task in ``ray.available_resources()``.

The actors belong to the launcher's Ray driver: when the launcher ends (the task ended, was
canceled, or the launcher died) Ray kills them, and each one's sandbox dies with it
(``--die-with-parent``). Each node's output goes to ``logs/attempt-<n>.node-<k>.log``, and what the
task uses there to ``telemetry/attempt-<n>.node-<k>.jsonl`` (issue 24).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from argus.core.launch import LaunchSpec

READY_TIMEOUT_S = 300.0


def node_ip() -> str:
    import ray

    return ray.util.get_node_ip_address()


def join_argv(spec: LaunchSpec, python: str, head: str, ip: str) -> list[str]:
    from argus.launcher.task_sandbox import PRIVATE_RAY, private_ray_share

    cpus, gpus = private_ray_share(spec)
    return [python, "-I", PRIVATE_RAY, "--join", head, "--cpus", str(cpus), "--gpus", str(gpus),
            *(["--memory", str(spec.memory)] if spec.memory else []), "--node-ip", ip]


class NodeSandbox:
    """Runs one extra node's sandbox until it ends; a Ray actor on the platform's cluster."""

    def run(self, spec: LaunchSpec, job_dir: str, index: int, head: str, token: str) -> int:
        from argus.launcher.driver import _die_with_parent
        from argus.launcher.task_sandbox import Sandbox

        sandbox = Sandbox(spec, Path(job_dir), scratch_suffix=f"node-{index}")
        sandbox.ray_token = token
        python = spec.python or sys.executable
        env = sandbox.env(dict(os.environ), os.path.dirname(python))
        argv, env = sandbox.wrap(join_argv(spec, python, head, node_ip()), env)
        log = Path(job_dir) / "logs" / f"attempt-{spec.attempt}.node-{index}.log"
        try:
            with open(log, "ab") as out:
                out.write(f"[argus] node {index} of the task: {sandbox.note}\n".encode())
                out.flush()
                child = subprocess.Popen(argv, env=env, cwd=job_dir, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
                return _wait_sampling(child, Path(job_dir), spec.attempt, index)
        finally:
            sandbox.cleanup()


def _wait_sampling(child: subprocess.Popen[bytes], job_dir: Path, attempt: int, index: int) -> int:
    """Wait for this node's sandbox, sampling what the task uses here (launcher/telemetry.py) into
    ``telemetry/attempt-<n>.node-<k>.jsonl``, which the server adds to the first node's samples."""
    from argus.launcher.telemetry import SAMPLE_S, Nvml, Sampler

    sampler = Sampler(child.pid, job_dir / "telemetry" / f"attempt-{attempt}.node-{index}.jsonl",
                      os.environ.get("CUDA_VISIBLE_DEVICES"), Nvml.open())
    while True:
        try:
            return child.wait(timeout=SAMPLE_S)
        except subprocess.TimeoutExpired:
            if sampler.failed is None:
                sampler.record()


class Gang:
    """The placement group and the node actors of one attempt (created by :meth:`start`)."""

    def __init__(self, spec: LaunchSpec, job_dir: Path) -> None:
        self.spec = spec
        self.job_dir = job_dir
        self.actors: list[Any] = []
        self.pg: Any = None

    def head_ip(self) -> str:
        import ray

        if not ray.is_initialized():
            ray.init(address=os.environ.get("RAY_ADDRESS", "auto"), logging_level="ERROR", log_to_driver=False)
        return node_ip()

    def start(self, head: str, token: str) -> str | None:
        """Place and start nodes 2..N; None when all run, else why not (the task must not start)."""
        import ray
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        spec, extra = self.spec, self.spec.nnodes - 1
        own = ray.get_runtime_context().get_node_id()
        share: dict[str, float] = {"worker_node": 1, **({"CPU": spec.cpus} if spec.cpus else {}),
                                   **({"GPU": spec.gpus} if spec.gpus and spec.device != "cpu" else {}), **({"memory": spec.memory} if spec.memory else {})}
        self.pg = placement_group([share] * extra, strategy="STRICT_SPREAD",
                                  bundle_label_selector=[{"ray.io/node-id": f"!{own}"}] * extra)
        try:
            ray.get(self.pg.ready(), timeout=READY_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - Ray's GetTimeoutError and friends: the task cannot start
            return (f"the platform's Ray found no {extra} other node(s) with {share} free within "
                    f"{READY_TIMEOUT_S:.0f} s ({type(exc).__name__})")
        actor = ray.remote(NodeSandbox)
        for i in range(extra):
            # the actor takes the bundle's GPUs (so Ray names them in its CUDA_VISIBLE_DEVICES); the
            # bundle's CPUs and memory stay held by the placement group for the task's Ray on that node
            a = actor.options(num_cpus=0, num_gpus=spec.gpus, scheduling_strategy=PlacementGroupSchedulingStrategy(
                                  placement_group=self.pg, placement_group_bundle_index=i)).remote()
            self.actors.append(a)
            a.run.remote(spec, str(self.job_dir), i + 2, head, token)  # runs until the actor is killed
        return None

    def stop(self) -> None:
        import ray

        for a in self.actors:
            try:
                ray.kill(a)
            except Exception:  # noqa: BLE001, S110 - already gone
                pass
        if self.pg is not None:
            from ray.util.placement_group import remove_placement_group

            try:
                remove_placement_group(self.pg)
            except Exception:  # noqa: BLE001, S110 - already gone with the driver
                pass
