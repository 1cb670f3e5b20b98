"""Do verl 0.4-era scripts need their own environment? The corpus041 specs through both (issue 22).

Run: ``.venv/bin/python bench/legacy_scripts.py [--width 0]``. A real API server over SQLite with
verl validation required and two training environments built from Argus's catalog locks (cached,
see tests/envs_fixtures.py): ``verl-0.4.1-cpu`` and ``verl-0.9.1-cpu``. The user's home holds tiny
models under every name the corpus uses and datasets shaped as verl 0.4.1's preprocessing writes
them (tests/verl/test_corpus041.py). Each spec of ``tests/verl/corpus041/specs`` (verl's own
examples at v0.4.1) is posted as a dry run as written (``env: verl-0.4.1-cpu``) and again with
``env: verl-0.9.1-cpu``. Prints each script's two verdicts (accept, or the first error) and the
totals; the claim is "refused by 0.9.1, accepted unchanged by 0.4.1".
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers import live_server  # noqa: E402
from tests.verl.test_corpus041 import (  # noqa: E402
    ARGUS_041_REFUSALS,
    GENUINE_041_REFUSALS,
    NEW,
    OLD,
    SPECS,
    USER,
    as_env,
    dry,
    install_envs,
    prepare,
    settings_for,
    verdict,
)


def clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--width", type=int, default=48, help="verdict column width (0: full messages)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        settings = settings_for(Path(tmp))
        install_envs(settings)
        with live_server(settings) as srv, srv.new_user(USER) as c:
            prepare(settings.root / "users" / USER)
            rows: list[tuple[str, str, str]] = []
            started = time.perf_counter()
            for spec in SPECS:
                text = spec.read_text()
                rows.append((spec.stem, verdict(dry(c, as_env(text, OLD))), verdict(dry(c, as_env(text, NEW)))))
            elapsed = time.perf_counter() - started
    n = len(rows)
    w = args.width or 10_000
    name_w = max(len(r[0]) for r in rows)
    print(f"verl 0.4.1-era example scripts (volcengine/verl v0.4.1) as written, and with env: {NEW}; "
          f"POST /api/v2/tasks?dry_run=true, verl validation required; {2 * n} requests in {elapsed:.1f} s")
    print("note: G = verl 0.4.1 itself refuses the script, A = Argus's defect (verl 0.4.1 accepts it)\n")
    print(f"{'script':{name_w}}  {'':1}  {'verl 0.4.1 verdict':{min(w, 48)}}  verl 0.9.1 verdict")
    for name, old, new in rows:
        note = "G" if name in GENUINE_041_REFUSALS else "A" if name in ARGUS_041_REFUSALS else ""
        print(f"{name:{name_w}}  {note:1}  {clip(old, w):{min(w, 48)}}  {clip(new, w)}")
    refused_new = sum(new != "accept" for _, _, new in rows)
    accepted_old = sum(old == "accept" for _, old, _ in rows)
    both = sum(old == "accept" and new != "accept" for _, old, new in rows)
    print(f"\nrefused by 0.9.1: {refused_new}/{n}, accepted by 0.4.1: {accepted_old}/{n}, both: {both}/{n}")
    valid = [(name, old) for name, old, _ in rows if name not in GENUINE_041_REFUSALS]
    print(f"verl 0.4.1 itself refuses {n - len(valid)}/{n}; of the {len(valid)} it accepts, Argus's {OLD} accepts "
          f"{sum(old == 'accept' for _, old in valid)}/{len(valid)}")
    print("\nknown exceptions:")
    for name, why in {**GENUINE_041_REFUSALS, **ARGUS_041_REFUSALS}.items():
        tag = "G" if name in GENUINE_041_REFUSALS else "A"
        print(f"  {tag} {name}: {why}")

if __name__ == "__main__":
    main()
