"""A multi-node task's other nodes: one sandbox each, joined to the task's private Ray (issue 21).

The launcher (:mod:`argus.launcher.driver`) runs on the task's first node and holds that
node's share; its sandbox runs the private Ray head and the command. For nodes 2..N it
asks the platform's Ray — from a child process, launcher/gang_keeper.py, whose Ray driver the platform's
Ray may end (a head away over 60 s) without ending the launcher — for a placement group of N-1 bundles, each the task's per-node
share (GPUs, CPUs, memory, one ``worker_node``), ``STRICT_SPREAD`` and never on the first
node (a label selector on ``ray.io/node-id``), so the task gets N distinct machines as
the scheduler counted. In each bundle a :class:`NodeSandbox` actor — platform code, on the
platform's Ray — has that node's sandbox started, whose ``private_ray.py --join`` adds the node
to the task's cluster with the task's token; the head waits for all N before the command
starts, so verl sees every GPU of the task in ``ray.available_resources()``.

Where the node has an agent (issue 36, nodes/agent.py), the actor does not start the sandbox itself:
it asks the agent to run this module (``python -I -m argus.launcher.gang <the LaunchSpec's flags>``, the
node's index, the head's address and the task's Ray token in its environment, never on a command line) in
the attempt's cgroup ``<task>.<attempt>.node-<k>`` — bounded like the first node's (launcher/task_bounds.py)
— and follows it. The node's processes are then the agent's, not children of a platform Ray worker: a
restarted platform head or raylet kills the actor, not the training. At the attempt's end the launcher asks
each actor to have its node stopped (the agent stops and empties the group); a node whose actor is gone
(the platform's Ray restarted meanwhile) ends once the task's private Ray head has gone (its raylet loses
the GCS), and its agent empties its group then. Without an agent, the actor runs the sandbox as its own
child, which dies with it (``--die-with-parent``).

Each node's output goes to ``logs/attempt-<n>.node-<k>.log``, and what the task uses there to
``telemetry/attempt-<n>.node-<k>.jsonl`` (issue 24).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from argus import home_io
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


# the node launcher's inputs besides its LaunchSpec (in its environment: the token must not be on a command line)
NODE_ENV, HEAD_ENV, TOKEN_ENV = "ARGUS_GANG_NODE", "ARGUS_GANG_HEAD", "ARGUS_GANG_TOKEN"
WAIT_S = 10.0  # one agent "wait" request
STOP_S = 60.0  # the launcher's wait for its nodes to stop at the attempt's end


def node_key(spec: LaunchSpec, index: int) -> str:
    """The node's attempt key at its agent (beside the first node's ``<task>.<attempt>``)."""
    return f"{Path(spec.job_dir).name}.{spec.attempt}.node-{index}"


def run_node(spec: LaunchSpec, index: int, head: str, token: str, *, bounded: bool = False) -> int:
    """Node ``index``'s sandbox, joined to the task's private Ray at ``head``, until it ends; its exit status.
    ``bounded``: in the task's cgroup with the task's limits (under an agent, which made the group)."""
    from argus.launcher.driver import _die_with_parent
    from argus.launcher.task_bounds import TaskBounds, limits_for
    from argus.launcher.task_sandbox import Sandbox

    job_dir = Path(spec.job_dir)
    sandbox = Sandbox(spec, job_dir, scratch_suffix=f"node-{index}")
    sandbox.ray_token = token
    python = spec.python or sys.executable
    env = sandbox.env(dict(os.environ), os.path.dirname(python))
    argv, env = sandbox.wrap(join_argv(spec, python, head, node_ip()), env)
    bounds = TaskBounds.create(f"argus-{job_dir.name}-a{spec.attempt}-n{index}", limits_for(spec)) if bounded else None
    log = job_dir / "logs" / f"attempt-{spec.attempt}.node-{index}.log"

    def preexec() -> None:
        _die_with_parent()
        if bounds is not None:
            bounds.join()

    try:
        with home_io.append_to(home_io.anchor_for(log), log) as out:  # never through a link the task planted
            notes = [sandbox.note, *(bounds.notes() if bounds is not None else [])]
            out.write(f"[argus] node {index} of the task: {'; '.join(n for n in notes if n)}\n".encode())
            out.flush()
            child = subprocess.Popen(argv, env=env, cwd=job_dir, stdin=subprocess.DEVNULL, stdout=out,
                                     stderr=subprocess.STDOUT, preexec_fn=preexec)

            if bounded:  # the node launcher's own process (main thread): the agent's stop ends the sandbox
                signal.signal(signal.SIGTERM, lambda *_: child.terminate())
            return _wait_sampling(child, job_dir, spec.attempt, index)
    finally:
        if bounds is not None:
            bounds.remove()
        sandbox.cleanup()


class NodeSandbox:
    """Has one extra node's sandbox run until it ends; a Ray actor on the platform's cluster."""

    def __init__(self) -> None:
        self.sock: str | None = None
        self.key: str | None = None

    def run(self, spec: LaunchSpec, index: int, head: str, token: str) -> int:
        from argus.nodes.agent_client import AGENT_ENV

        sock = os.environ.get(AGENT_ENV)
        if sock:
            code = self._under_agent(sock, spec, index, head, token)
            if code is not None:
                return code
        return run_node(spec, index, head, token)

    def _under_agent(self, sock: str, spec: LaunchSpec, index: int, head: str, token: str) -> int | None:
        """The node's sandbox run by the node's agent and followed here; None when no agent took it."""
        import ray

        from argus.nodes.agent import KEY_ENV, NODE_ID_ENV
        from argus.nodes.agent_client import AgentError, request, wait_for_end

        key = node_key(spec, index)
        env = {**os.environ, NODE_ENV: str(index), HEAD_ENV: head, TOKEN_ENV: token,
               NODE_ID_ENV: ray.get_runtime_context().get_node_id()}
        env.pop(KEY_ENV, None)
        try:
            request(sock, "start", key=key, argv=[sys.executable, "-I", "-m", __name__, *spec.flags()], env=env,
                    cwd="/")
        except AgentError:
            return None  # as on a node without an agent
        self.sock, self.key = sock, key
        code = wait_for_end(sock, key, lambda: WAIT_S)
        return 1 if code is None else int(code)

    def stop(self) -> None:
        """The attempt ended: the agent stops this node (SIGTERM, then its whole group) and confirms."""
        from argus.nodes.agent_client import AgentError, request

        if self.sock and self.key:
            try:
                request(self.sock, "stop", key=self.key, timeout_s=STOP_S)
            except AgentError:
                pass


def main(args: list[str] | None = None) -> int:
    """The node launcher under the node's agent: node ``$ARGUS_GANG_NODE`` of the attempt in the spec."""
    from argus.nodes.agent import EXIT_FILE_ENV

    spec = LaunchSpec.parse(sys.argv[1:] if args is None else args)
    index, head, token = int(os.environ.pop(NODE_ENV)), os.environ.pop(HEAD_ENV), os.environ.pop(TOKEN_ENV)
    code = run_node(spec, index, head, token, bounded=True)
    code = 128 - code if code < 0 else code
    exit_file = os.environ.get(EXIT_FILE_ENV)
    if exit_file:  # the agent's word on how the node ended, if it restarted meanwhile
        try:
            Path(exit_file).write_text(f"{code}\n")
        except OSError:
            pass
    return code


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
            # bundle's CPUs and memory stay held by the placement group for the task's Ray on that node;
            # two calls at once: ``stop`` while ``run`` follows the node
            a = actor.options(num_cpus=0, num_gpus=spec.gpus, max_concurrency=2,
                              scheduling_strategy=PlacementGroupSchedulingStrategy(
                                  placement_group=self.pg, placement_group_bundle_index=i)).remote()
            self.actors.append(a)
            a.run.remote(spec, i + 2, head, token)  # runs until the node ends or the actor is killed
        return None

    def stop(self) -> None:
        """Every node stopped (by its agent, confirmed) and its actor and the placement group gone."""
        import ray

        if self.actors:
            try:
                ray.get([a.stop.remote() for a in self.actors], timeout=STOP_S + 10)
            except Exception:  # noqa: BLE001, S110 - an actor already gone (its node then ends with the task's Ray)
                pass
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


if __name__ == "__main__":
    sys.exit(main())
