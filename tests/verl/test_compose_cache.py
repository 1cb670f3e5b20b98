"""The validator's compose caches build exactly what Hydra builds (``worker._compose_defaults_once``).

Each corpus spec is composed twice, in two processes: by the validator (caches warm, specs in one
order) and by plain Hydra (no Argus code loaded). The YAML of the two configs must be identical.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.verl.corpus_home import SPECS, prepare

REPO = Path(__file__).resolve().parents[2]
PLAIN = """
import json, sys
from omegaconf import OmegaConf
from tests.verl.corpus_truth import _compose, command_parts
home, out = sys.argv[1], {}
for path in sys.argv[2:]:
    _module, cfg_path, name, overrides = command_parts(open(path).read(), home)
    try:
        out[path] = OmegaConf.to_yaml(_compose(cfg_path, name, overrides, resolve=False))
    except Exception as exc:
        out[path] = "error: " + type(exc).__name__
print(json.dumps(out))
"""
CACHED = """
import json, os, sys
sys.path.insert(0, "src")
from omegaconf import OmegaConf
from argus.verl import worker
from tests.verl.corpus_truth import command_parts
v = worker.Validator()
home, out = sys.argv[1], {}
for path in reversed(sys.argv[2:]):  # another order: a cache filled by one spec serves the next
    _module, cfg_path, name, overrides = command_parts(open(path).read(), home)
    try:
        if cfg_path and cfg_path.startswith("/"):
            files = {str(p.relative_to(cfg_path)): p.read_text() for p in __import__("pathlib").Path(cfg_path).rglob("*.yaml")}
            with worker._user_config_dir(files):
                cfg = v.compose(name, overrides)
        else:
            cfg = v.compose(name, overrides)
        out[path] = OmegaConf.to_yaml(cfg)
    except Exception as exc:
        out[path] = "error: " + type(exc).__name__
print(json.dumps(out))
"""


def _run(code: str, home: Path, specs: list[str]) -> dict[str, str]:
    r = subprocess.run([sys.executable, "-c", code, str(home), *specs], cwd=REPO, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_cached_compose_equals_hydras(tmp_path):
    home = tmp_path / "home"
    prepare(home)
    # every third spec, and every one with its own config folder or config name: ~40 distinct composes
    specs = [str(p) for i, p in enumerate(SPECS) if i % 3 == 0 or "--config-" in p.read_text()]
    plain, cached = _run(PLAIN, home, specs), _run(CACHED, home, specs)
    composed = [s for s in specs if not plain[s].startswith("error")]
    assert len(composed) > 20, plain
    for s in specs:
        assert cached[s] == plain[s], f"{Path(s).name}: the validator's config differs from Hydra's"


WARM = """
import json, sys
sys.path.insert(0, "src")
from argus.verl import worker
before = set(sys.modules)
v = worker.Validator()
print(json.dumps({"schemas": sorted(v._schemas), "imported": sorted(set(sys.modules) - before)}))
"""


def test_the_validator_is_warm_before_it_says_ready():
    """What a first submit of each entry would pay (verl's lazy imports, each packaged config's first
    compose) is paid in the constructor, which runs before the worker answers "ready"."""
    r = subprocess.run([sys.executable, "-c", WARM], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert {"ppo_trainer", "ppo_megatron_trainer", "sft_trainer_engine"} <= set(out["schemas"])
    # main_ppo's validate_config and the worker configs it builds (which import transformers) are loaded
    assert {"verl.utils.config", "verl.trainer.ppo.utils", "verl.workers.config", "transformers"} <= set(out["imported"])
