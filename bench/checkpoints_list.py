"""How long `GET /tasks/{id}/checkpoints` spends reading a large checkpoint folder (services/checkpoints.py).

A folder of STEPS ``global_step_N`` folders, each with an actor and a critic of SHARDS shard files
(the layout of a sharded FSDP run), read with the O_NOFOLLOW walk the API uses. Prints files per
second and the time per listing. Run: ``.venv/bin/python bench/checkpoints_list.py [STEPS] [SHARDS]``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path, PurePosixPath

from argus.services.checkpoints import list_folder


def main(steps: int = 20, shards: int = 64) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "users" / "alice"
        folder = home / "jobs" / "t" / "checkpoints"
        for n in range(1, steps + 1):
            for part in ("actor", "critic"):
                d = folder / f"global_step_{n}" / part
                d.mkdir(parents=True)
                for r in range(shards):
                    for kind in ("model", "optim", "extra_state"):
                        (d / f"{kind}_world_size_{shards}_rank_{r}.pt").write_bytes(b"x" * 128)
                (d / "huggingface").mkdir()
                (d / "huggingface" / "config.json").write_text("{}")
            (folder / f"global_step_{n}" / "data.pt").write_bytes(b"d")
        (folder / "latest_checkpointed_iteration.txt").write_text(str(steps))
        files = steps * (2 * (shards * 3 + 1) + 1)
        runs = []
        for _ in range(5):
            t0 = time.perf_counter()
            listing = list_folder(home, PurePosixPath(folder), active=False)
            runs.append(time.perf_counter() - t0)
        assert len(listing.steps) == steps and all(s.complete for s in listing.steps)
        best = min(runs)
        print(f"checkpoint listing: {steps} steps x 2 parts x {shards} ranks = {files} files: "
              f"best {best * 1000:.1f} ms, median {sorted(runs)[2] * 1000:.1f} ms per listing, "
              f"{files / best:,.0f} files/s")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
