"""`python3 -m argus.jobs.ray_gpus --gpus N`: which GPUs do my task's Ray workers get? (a Ray-placed job)

It does what verl's ``main_ppo`` does with GPUs: its driver holds none, it asks Ray for a
placement group of N one-GPU bundles and starts one actor per bundle; each actor prints
the ``CUDA_VISIBLE_DEVICES`` Ray gave it and whether it runs in its owner's jail. With
``--reward PATH`` each actor also imports and calls a custom reward the way verl's reward
workers do, and ``--actor-runtime-env JSON`` starts one more actor with a runtime_env of
the user's choosing — both show what a task's own code can reach from inside Ray.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def _report(tag: str, reward: str | None) -> str:
    line = (f"ray_gpus: {tag} pid={os.getpid()} CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')} "
            f"jail={os.environ.get('ARGUS_JAILED', '<none>')}")
    if reward:
        from argus.verl.reward_banner import load_reward

        try:
            score = load_reward(reward)("probe", "answer", "answer")
            line += f" reward={score!r}"
        except Exception as exc:  # noqa: BLE001 - user code: report whatever it raised
            line += f" reward-error={type(exc).__name__}: {exc}"
    return line


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="argus.jobs.ray_gpus", description=__doc__.splitlines()[0])
    p.add_argument("--gpus", type=int, default=1, help="one-GPU actors to place")
    p.add_argument("--hold", type=float, default=0.0,
                   help="seconds the actors keep their GPUs (with --gpus 0: the driver keeps its Ray cluster)")
    p.add_argument("--strategy", default="PACK", choices=["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"],
                   help="the placement group's strategy (STRICT_SPREAD: one GPU per node of the task's cluster)")
    p.add_argument("--reward", help="a custom reward file to import and call inside each actor")
    p.add_argument("--actor-runtime-env", action="append", default=[],
                   help="JSON runtime_env for one extra (CPU) actor; repeatable")
    args = p.parse_args(argv)

    import ray
    from ray.util.placement_group import placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    print(f"ray_gpus: driver CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>')}", flush=True)
    ray.init()
    nodes = [n for n in ray.nodes() if n["Alive"]]
    print(f"ray_gpus: cluster nodes={len(nodes)} GPU={ray.cluster_resources().get('GPU', 0):g} "
          f"CPU={ray.cluster_resources().get('CPU', 0):g}", flush=True)
    if args.gpus == 0 and args.hold > 0:
        print(f"ray_gpus: holding the task's Ray for {args.hold:g} s", flush=True)
        time.sleep(args.hold)

    @ray.remote(num_cpus=0)
    class Probe:
        def report(self, tag: str, reward: str | None, hold: float) -> str:
            time.sleep(hold)
            return _report(tag, reward) + f" node={ray.get_runtime_context().get_node_id()[:8]}"

    lines: list[str] = []
    if args.gpus > 0:
        pg = placement_group([{"GPU": 1}] * args.gpus, strategy=args.strategy)
        ray.get(pg.ready(), timeout=120)
        actors = [Probe.options(num_gpus=1, scheduling_strategy=PlacementGroupSchedulingStrategy(
            placement_group=pg, placement_group_bundle_index=i)).remote() for i in range(args.gpus)]
        lines += ray.get([a.report.remote(f"actor-{i}", args.reward, args.hold) for i, a in enumerate(actors)])
    for i, raw in enumerate(args.actor_runtime_env):
        extra = Probe.options(runtime_env=json.loads(raw)).remote()
        try:
            lines.append(ray.get(extra.report.remote(f"own-runtime-env-{i}", args.reward, 0.0), timeout=120))
        except Exception as exc:  # noqa: BLE001 - Ray refuses or fails the actor: report why
            last = str(exc).strip().splitlines()[-1] if str(exc).strip() else ""
            lines.append(f"ray_gpus: own-runtime-env-{i} refused: {type(exc).__name__}: {last[-300:]}")
    for line in lines:
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
