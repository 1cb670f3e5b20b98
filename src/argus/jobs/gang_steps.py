"""`python3 -m argus.jobs.gang_steps nodes=2 total=60`: a trainer on every node of a multi-node task (no GPU work).

What ``argus.jobs.steps`` is for one node, on ``nodes`` nodes of the task's private Ray, placed as verl places
its workers: the driver holds nothing, asks Ray for a ``STRICT_SPREAD`` placement group of ``nodes`` bundles
(one GPU each when the task's Ray has that many GPUs, else one CPU) and starts one actor per bundle. Each
actor, every ``step_seconds``, prints ``step:K - node:N pid:P`` (P its pid in the sandbox) and appends the same
line to ``<cwd>/steps/node-N.log`` — N is 1 on the node the driver runs on (the task's first node), then 2.. in
bundle order — so each node's steps can be read from disk on its own, whatever Ray forwards to the task's log
(``RAY_DEDUP_LOGS=0`` here, so every forwarded line arrives). The driver ends when every actor has done
``total`` steps. Keys: ``nodes`` (default 2), ``total`` (default 10), ``step_seconds`` (default 1).
"""

from __future__ import annotations

import os
import sys
import time


def _args(argv: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for word in argv:
        key, sep, value = word.partition("=")
        if not sep:
            raise SystemExit(f"argus.jobs.gang_steps: expected key=value, got {word!r}")
        out[key] = value
    return out


class Stepper:
    """One node's trainer (a Ray actor)."""

    def node_id(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()

    def run(self, node: int, total: int, pause: float, folder: str) -> int:
        os.makedirs(folder, exist_ok=True)
        start = time.monotonic()
        with open(os.path.join(folder, f"node-{node}.log"), "a") as out:
            for step in range(1, total + 1):
                time.sleep(max(0.0, start + step * pause - time.monotonic()))  # on schedule, not drifting
                line = f"step:{step} - node:{node} pid:{os.getpid()}"
                out.write(line + "\n")
                out.flush()
                print(line, flush=True)
        return os.getpid()


def main(argv: list[str] | None = None) -> int:
    a = _args(sys.argv[1:] if argv is None else argv)
    nodes, total, pause = int(a.get("nodes", "2")), int(a.get("total", "10")), float(a.get("step_seconds", "1"))
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")  # read by the driver's log printer: one line per actor line
    import ray
    from ray.util.placement_group import placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    ray.init()
    here = ray.get_runtime_context().get_node_id()
    bundle = {"GPU": 1} if ray.cluster_resources().get("GPU", 0) >= nodes else {"CPU": 1}
    pg = placement_group([bundle] * nodes, strategy="STRICT_SPREAD")
    ray.get(pg.ready(), timeout=300)
    actor = ray.remote(Stepper)
    actors = [actor.options(num_cpus=0, num_gpus=bundle.get("GPU", 0),
                            scheduling_strategy=PlacementGroupSchedulingStrategy(
                                placement_group=pg, placement_group_bundle_index=i)).remote()
              for i in range(nodes)]
    where = ray.get([x.node_id.remote() for x in actors])
    others = iter(range(2 if here in where else 1, nodes + 1))
    numbers = [1 if w == here else next(others) for w in where]
    print(f"gang_steps: {nodes} nodes, {total} steps of {pause:g} s; actors on nodes {numbers}", flush=True)
    folder = os.path.abspath("steps")
    pids = ray.get([x.run.remote(n, total, pause, folder) for x, n in zip(actors, numbers, strict=True)])
    print(f"gang_steps: done at step {total} on every node (pids {pids})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
