"""How far a refusal gets a user: problems listed per refused spec, expected 0.9.1 keys named, latency (issue 23).

Run: ``.venv/bin/python bench/admission_round3.py [--width 60]``. A real API server over SQLite whose
admission runs real verl 0.9.1 validation (required mode, the validator of Argus's own venv), as in
``tests/verl/conftest.py``. The home holds tiny models and datasets at every path the specs name.

Specs: ``tests/verl/corpus_old/specs`` (launch scripts written for verl 0.1-0.7 in the shapes of public
projects; each ``# expect: OLD -> NEW`` line is a key the refusal must name with its verl 0.9.1
successor) and the refused specs of ``tests/verl/corpus041/specs`` (verl's own v0.4.1 examples, judged
by 0.9.1), and ``MIXED``: the GRPO command of tests/verl/test_verl_admission.py with several planted
defects of different stages each. Each is posted as a dry run ``--rounds`` times. Prints per spec: problems listed, expected
keys named (``E+Ww/N``: in a problem, in a warning, of N), the first problem; then problems per refused
spec and p50/p95 of the submit latency.
The same file runs on an older checkout (its tests.helpers and tests.verl.conftest) for before/after.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers import live_server  # noqa: E402
from tests.verl.conftest import populate_home, write_rl_parquet, write_sft_parquet  # noqa: E402
from tests.verl.corpus_home import populate  # noqa: E402
from tests.verl.test_verl_admission import PPO_ARGS, advanced  # noqa: E402

from argus.settings import Settings  # noqa: E402
from argus.verl.check import VerlCheck  # noqa: E402
from argus.verl.entry import EntryModuleCheck  # noqa: E402
from argus.verl.validator import VerlValidator  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OLD = ROOT / "tests" / "verl" / "corpus_old"
C041 = ROOT / "tests" / "verl" / "corpus041" / "specs"
EXPECT = re.compile(r"^# expect: (\S+) -> (\S+)", re.M)
USER = "alice"
# Specs with several planted defects of different stages (paths, keys, values, files, models, reward), on the
# GRPO command of tests/verl/test_verl_admission.py: (name, keys replaced, defects; one problem each).
MIXED = [
    ("foreign-path+typo+model", ("data.val_files", "actor_rollout_ref.model.path"), [
        "data.val_files=$HOME/../bob/x.parquet", "data.train_batch_sz=8", "actor_rollout_ref.model.path=$HOME/models/nope"]),
    ("pkl+typo", ("data.train_files",), ["data.train_files=$HOME/datasets/train.pkl", "trainer.total_epoch=3"]),
    ("dup-plus+estimator+value", ("algorithm.adv_estimator",), [
        "+data.train_batch_size=8", "algorithm.adv_estimator=grpoo", "trainer.total_epochs=x"]),
    ("mini-typo+missing-val", ("actor_rollout_ref.actor.ppo_mini_batch_size", "data.val_files"), [
        "actor_rollout_ref.actor.ppo_mini_batchsize=4", "data.val_files=$HOME/datasets/nope.parquet"]),
    ("six", ("actor_rollout_ref.actor.ppo_mini_batch_size", "data.train_files", "data.val_files",
             "algorithm.adv_estimator"), [
        "actor_rollout_ref.actor.ppo_mini_batchsize=4", "data.train_files=$HOME/datasets/train.pkl",
        "+data.train_batch_size=8", "data.val_files=$HOME/../bob/x.parquet", "trainer.total_epochs=x",
        "algorithm.adv_estimator=grpoo"]),
    ("reward+foreign+typo", ("data.val_files",), [
        "reward.custom_reward_function.path=$HOME/code/nope.py", "data.val_files=$HOME/../bob/v.parquet",
        "actor_rollout_ref.rollout.nn=2"]),
    ("relative+bool", ("data.val_files", "actor_rollout_ref.actor.use_kl_loss"), [
        "data.val_files=datasets/val.parquet", "actor_rollout_ref.actor.use_kl_loss=maybe"]),
    ("tilde-user+n_val", ("data.val_files",), ["data.val_files=~bob/v.parquet", "actor_rollout_ref.rollout.n_val=4"]),
]


def named(errors: list[dict], warnings: list[str], old: str, new: str) -> str:
    """Where the answer names ``old`` with ``new``: "error" (a problem about ``old``: its field, or its value
    for a module), "warning" (a key verl 0.9.1 still accepts), or "" (not named)."""
    def tells(text: str) -> bool:
        return new in text or (new == "(remove)" and any(w in text for w in ("delete", "remove", "ignored")))

    for e in errors:
        if (e["field"] == f"command: {old}" or str(e.get("value")) == old) and tells(f"{e['message']} {e.get('value')}"):
            return "error"
    return "warning" if any(old in w and tells(w) for w in warnings) else ""


def clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--width", type=int, default=60, help="first-problem column width")
    ap.add_argument("--rounds", type=int, default=3, help="dry runs per spec (latency samples)")
    ap.add_argument("--fixes", action="store_true", help="list every one-click fix offered (key: replace -> with)")
    args = ap.parse_args()
    old_specs = sorted((OLD / "specs").glob("*.yaml"))
    specs = [(p, p.read_text()) for p in old_specs]
    specs += [(p, re.sub(r"^env: .*\n", "", p.read_text(), flags=re.M)) for p in sorted(C041.glob("*.yaml"))]
    planted: dict[str, list[str]] = {}
    for name, drop, defects in MIXED:
        specs.append((ROOT / "mixed" / "specs" / f"{name}.yaml", advanced(PPO_ARGS, drop=drop, extra=defects)))
        planted[name] = [d.lstrip("+").split("=", 1)[0] for d in defects]
    found: dict[str, int] = {}
    validator = VerlValidator(sys.executable, timeout_s=120)
    validator.start_background()
    rows = []
    fixes: list[tuple[str, str, str, str]] = []  # (spec, field, replace, with): what a one-click button would do
    latencies: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(state_dir=Path(tmp) / "state", sftp_enabled=False, verl_validation="required",
                            reward_check_rows=3, reward_check_timeout_s=60)

        def configure(ctx):  # noqa: ANN001, ANN202
            ctx.checks = (EntryModuleCheck(ctx.settings, validator), VerlCheck(ctx.settings, validator))

        with live_server(settings, configure) as srv, srv.new_user(USER) as c:
            home = settings.root / "users" / USER
            populate_home(settings.root)  # the GRPO command's files (models/tiny, datasets/train.parquet, ...)
            if (OLD / "code").is_dir():
                shutil.copytree(OLD / "code", home / "code", dirs_exist_ok=True)

            def dataset(target: Path, text: str) -> None:
                sft = "sft_trainer" in text
                (write_sft_parquet if sft else write_rl_parquet)(target, 16)

            populate(home, [p for p, _ in specs if p.exists()], home / "models" / "tiny", dataset)
            for path, text in specs:
                for _ in range(args.rounds):
                    started = time.perf_counter()
                    r = c.post("/api/v2/tasks", params={"dry_run": "true"}, content=text.encode(),
                               headers={"Content-Type": "application/yaml"})
                    latencies.append(time.perf_counter() - started)
                body = r.json()
                errors = body["detail"].get("errors", []) if r.status_code == 400 else []
                warnings = body["detail"].get("warnings", []) if r.status_code == 400 else body.get("warnings", [])
                fixes += [(path.stem, e["field"], e["fix"]["replace"], e["fix"]["with"]) for e in errors if e.get("fix")]
                if path.stem in planted:  # a planted defect is named when a problem is about its key
                    found[path.stem] = sum(any(e["field"] == f"command: {k}" for e in errors) for k in planted[path.stem])
                expects = EXPECT.findall(text)
                where = [named(errors, warnings, o, n) for o, n in expects]
                hit = (where.count("error"), where.count("warning"))
                first = f"{errors[0]['field']}: {errors[0]['message']}" if errors else f"HTTP {r.status_code}"
                rows.append((path.parent.parent.name, path.stem, r.status_code, len(errors), hit, len(expects), first))
    validator.stop()
    name_w = max(len(r[1]) for r in rows)
    print(f"{len(rows)} specs, {len(latencies)} dry runs (POST /api/v2/tasks?dry_run=true, verl 0.9.1 required)\n")
    print(f"{'corpus':11} {'spec':{name_w}}  HTTP  problems  expected-named  first problem")
    for corpus, name, code, n, hit, total, first in rows:
        exp = f"{hit[0]}+{hit[1]}w/{total}" if total else "-"
        print(f"{corpus:11} {name:{name_w}}  {code:4}  {n:8}  {exp:>14}  {clip(first, args.width)}")
    for corpus in dict.fromkeys(r[0] for r in rows):
        mine = [r for r in rows if r[0] == corpus]
        refused = [r for r in mine if r[2] == 400]
        per = [r[3] for r in refused]
        line = (f"\n{corpus}: refused {len(refused)}/{len(mine)}; problems per refused spec: mean "
                f"{statistics.mean(per) if per else 0:.2f}, median {statistics.median(per) if per else 0:g}, "
                f"max {max(per, default=0)}; 1-problem refusals: {sum(p == 1 for p in per)}")
        total = sum(r[5] for r in mine)
        if total:
            in_err, in_warn = sum(r[4][0] for r in mine), sum(r[4][1] for r in mine)
            line += (f"\n  expected 0.9.1 keys named: {in_err + in_warn}/{total} ({in_err} in a refusal's problems, "
                     f"{in_warn} in a warning: keys verl 0.9.1 still accepts)")
        if corpus == "mixed":
            line += (f"\n  planted defects {sum(len(v) for v in planted.values())}, named under their key "
                     f"{sum(found.values())}, problems listed {sum(r[3] for r in mine)} (named/planted/listed: "
                     + ", ".join(f"{r[1]} {found[r[1]]}/{len(planted[r[1]])}/{r[3]}" for r in mine) + ")")
        print(line)
    print(f"\none-click fixes offered: {len(fixes)} in {len({f[0] for f in fixes})} specs (issue 35: only the rename "
          "table, a same-parent spelling slip, a value of verl's registry; review them with --fixes)")
    if args.fixes:
        for spec, fld, old, new in fixes:
            print(f"  {spec}: {fld}: {old!r} -> {new!r}")
    q = statistics.quantiles(latencies, n=20)
    print(f"\nsubmit latency (dry run): p50 {statistics.median(latencies) * 1000:.0f} ms, p95 {q[18] * 1000:.0f} ms")


if __name__ == "__main__":
    main()
