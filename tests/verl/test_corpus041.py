"""verl 0.4.1-era example scripts, unchanged: accepted in their own environment, refused by verl 0.9.1 (issue 22).

The corpus (``tests/verl/corpus041/specs``) is volcengine/verl's ``examples/`` at tag v0.4.1
(commit 8d9e350ea58c), converted by ``scripts/verl_corpus.py`` like the 0.8.0.dev corpus, with
``env: verl-0.4.1-cpu``. Chosen: every ppo/grpo/remax/rloo/reinforce++/sft launch script that runs
``verl.trainer.main_ppo`` with FSDP or ``verl.trainer.fsdp_sft_trainer``, minus megatron, NPU and
vision-language scripts (they need configs, devices or image datasets a CPU environment lacks) and
three near-duplicates (``run_deepseek7b_llm_modelscope``: the same command as ``run_deepseek7b_llm``
once converted; ``run_qwen2-7b_rm_seq_balance_nsys`` / ``_fused_kernels``: profiler / kernel variants
of ``run_qwen2-7b_rm_seq_balance``).

The home holds tiny models under every name the corpus uses and datasets shaped as verl 0.4.1's own
``examples/data_preprocess`` scripts write them (gsm8k.py, math_dataset.py, multiturn.py), since the
scripts were written against those files.

Each spec's second and third lines are verl's own verdicts, taken apart from Argus on that home:
``verl 0.4.1 start-up`` composes the command with verl 0.4.1's Hydra config, resolves it and runs what
its trainer checks before training (``RayPPOTrainer._validate_config``; for SFT, building its
``SFTDataset`` / ``MultiTurnSFTDataset`` on the home's parquet and reading a row; with pandas < 3, see
the report on the catalog's pandas pin); ``verl 0.9.1 config stage`` is ``tests/verl/corpus_truth.py``.

Each spec is posted as a dry run twice: as written (judged by verl 0.4.1 in its environment) and
with ``env: verl-0.9.1-cpu`` (judged by verl 0.9.1). Argus must accept what verl 0.4.1 accepts, but
for the listed exceptions, and a majority must be refused by verl 0.9.1, each as verl 0.9.1 itself
decides. ``bench/legacy_scripts.py`` prints the table.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from argus.settings import Settings
from tests.envs_fixtures import install_env
from tests.helpers import LiveServer, live_server
from tests.verl.conftest import make_tiny_model, write_rl_parquet
from tests.verl.corpus_home import populate

CORPUS = Path(__file__).parent / "corpus041"
SPECS = sorted((CORPUS / "specs").glob("*.yaml"))
OLD, NEW = "verl-0.4.1-cpu", "verl-0.9.1-cpu"
USER = "alice"

_TRUTH_041 = re.compile(r"^# verl 0\.4\.1 start-up: (.*)$", re.M)
_TRUTH_091 = re.compile(r"^# verl 0\.9\.1 config stage: (.*)$", re.M)

# The known exceptions to "accepted unchanged by verl-0.4.1-cpu", each with its reason.
# Genuine: verl 0.4.1 itself refuses the script (its second line records what verl said); Argus must refuse too.
GENUINE_041_REFUSALS: dict[str, str] = {
    # The script's line `algorithm.pf_ppo.reweight_method=pow \  # ["pow", ...]` escapes a space and the
    # comment ends the command: bash runs main_ppo with three overrides and a ' ' word (Hydra cannot parse
    # it); the remaining overrides become separate, failing commands. The spec is what bash runs.
    "ppo_trainer__run_deepseek7b_llm_pfppo": "script bug: a comment after a line continuation truncates the command",
    # data.prompt_key=prompt data.response_key=answer, but verl's own examples/data_preprocess/gsm8k.py
    # writes the answer inside extra_info (no `answer` column): SFTDataset raises KeyError at load.
    "sft__gsm8k__run_gemma_7b": "script/data mismatch: no `answer` column in verl's gsm8k parquet",
}
# Argus's own defects: verl 0.4.1 accepts the script, Argus refuses it (strict xfail: fixed → XPASS → remove it).
# (The five gsm8k SFT scripts were here: Argus required a `messages` column of every SFT task; verl 0.4.1's
# fsdp_sft_trainer reads data.prompt_key/data.response_key unless data.multiturn.enable is on.)
ARGUS_041_REFUSALS: dict[str, str] = {}


# ------------------------------------------------------------------ the home (shared with the bench)

def _gsm8k(path: Path, rows: int) -> None:
    """As verl 0.4.1's examples/data_preprocess/gsm8k.py writes it (the SFT scripts read extra_info)."""
    split = "test" if "test" in path.name else "train"
    pq.write_table(pa.table({
        "data_source": ["openai/gsm8k"] * rows,
        "prompt": [[{"role": "user", "content": f"what is {i} plus 1 ? Let's think step by step"}]
                   for i in range(rows)],
        "ability": ["math"] * rows,
        "reward_model": [{"style": "rule", "ground_truth": str(i + 1)} for i in range(rows)],
        "extra_info": [{"split": split, "index": i, "answer": f"{i} plus 1 is {i + 1} #### {i + 1}",
                        "question": f"what is {i} plus 1 ?"} for i in range(rows)],
    }), path)


def _multiturn(path: Path, rows: int) -> None:
    """As verl 0.4.1's examples/data_preprocess/multiturn.py writes it."""
    pq.write_table(pa.table({"messages": [[
        {"role": "system", "content": "you are a helpful assistant"},
        {"role": "user", "content": f"what is {i} plus 1 ?"},
        {"role": "assistant", "content": str(i + 1)},
        {"role": "user", "content": "and plus 2 ?"},
        {"role": "assistant", "content": str(i + 2)},
    ] for i in range(rows)]}), path)


def prepare(home: Path) -> None:
    """Tiny copies of every ``$HOME/models/<name>`` and ``$HOME/datasets/<file>`` the corpus names."""
    tiny = home / "models" / "tiny"
    if not tiny.exists():
        make_tiny_model(tiny)
        # The server's transformers (5.x) records its own tokenizer class, which the 0.4.1 environment's
        # transformers (4.5x) cannot load: the prompt-length check would be skipped there with a warning.
        # PreTrainedTokenizerFast loads in both, as a tokenizer saved by an older transformers would.
        cfg_file = tiny / "tokenizer_config.json"
        cfg = json.loads(cfg_file.read_text())
        cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
        cfg.pop("backend", None)
        cfg_file.write_text(json.dumps(cfg, indent=2))
    populate(home, SPECS, tiny, _dataset)


def _dataset(target: Path, _spec: str) -> None:
    """Shaped as verl 0.4.1's preprocessing scripts write each folder's files."""
    if target.parent.name == "gsm8k":
        _gsm8k(target, 16)
    elif target.parent.name == "multiturn":
        _multiturn(target, 16)
    else:  # math_dataset.py's shape (and Eurus-2-RL-Data's): prompt, data_source, reward_model
        write_rl_parquet(target, 16)


def settings_for(state_dir: Path) -> Settings:
    """Verl validation required; models are local tiny copies, so the model check stays on."""
    return Settings(state_dir=state_dir, sftp_enabled=False, verl_validation="required")


def install_envs(settings: Settings) -> None:
    for name in (OLD, NEW):
        install_env(settings.root, name)


def as_env(text: str, env: str) -> str:
    out, n = re.subn(r"^env: .*$", f"env: {env}", text, count=1, flags=re.M)
    assert n == 1, "spec has no env: line"
    return out


def dry(client: Any, text: str) -> Any:
    return client.post("/api/v2/tasks", params={"dry_run": "true"}, content=text.encode(),
                       headers={"Content-Type": "application/yaml"})


def verdict(r: Any) -> str:
    """"accept", or the first error as ``field: message``."""
    if r.status_code == 200:
        return "accept"
    try:
        errors = r.json()["detail"]["errors"]
        e = errors[0]
        return f"{e['field']}: {e['message']}"
    except Exception:  # noqa: BLE001 - whatever else came back
        return f"HTTP {r.status_code}: {r.text[:200]}"


# ------------------------------------------------------------------ tests

@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    settings = settings_for(tmp_path_factory.mktemp("corpus041"))
    install_envs(settings)
    with live_server(settings) as s:
        yield s


@pytest.fixture(scope="module")
def client(srv: LiveServer):  # noqa: ANN201
    with srv.new_user(USER) as c:
        prepare(srv.ctx.settings.root / "users" / USER)
        yield c


@pytest.fixture(scope="module")
def verdicts(client) -> dict[str, dict[str, str]]:  # noqa: ANN001
    """{spec stem: {env: verdict}} for the whole corpus, posted once."""
    out: dict[str, dict[str, str]] = {}
    for spec in SPECS:
        text = spec.read_text()
        out[spec.stem] = {env: verdict(dry(client, as_env(text, env))) for env in (OLD, NEW)}
    return out


def test_corpus_is_a_sample():
    assert 15 <= len(SPECS) <= 30
    for spec in SPECS:
        text = spec.read_text()
        assert text.startswith("# source: volcengine/verl@8d9e350ea58c examples/") and "(verl 0.4.1)" in text
        assert f"\nenv: {OLD}\n" in text and _TRUTH_041.search(text) and _TRUTH_091.search(text), spec.name
    stems = {p.stem for p in SPECS}
    assert set(GENUINE_041_REFUSALS) | set(ARGUS_041_REFUSALS) <= stems
    for spec in SPECS:  # the exceptions are exactly the scripts verl 0.4.1 refuses, plus Argus's defects
        refused = _TRUTH_041.search(spec.read_text()).group(1) != "accept"
        assert refused == (spec.stem in GENUINE_041_REFUSALS), spec.name


def _param(spec: Path):  # noqa: ANN202
    reason = ARGUS_041_REFUSALS.get(spec.stem)
    return pytest.param(spec, id=spec.stem, marks=[pytest.mark.xfail(strict=True, reason=reason)] if reason else [])


@pytest.mark.parametrize("spec", [_param(p) for p in SPECS])
def test_accepted_by_its_own_verl(verdicts, spec: Path):  # noqa: ANN001
    got = verdicts[spec.stem][OLD]
    if spec.stem in GENUINE_041_REFUSALS:
        assert got != "accept", f"{spec.stem} is accepted in {OLD}, but verl 0.4.1 refuses it"
        return
    assert got == "accept", f"{spec.stem} refused in {OLD}: {got}"


def test_most_are_refused_by_verl_091(verdicts):  # noqa: ANN001
    refused = sorted(s for s, v in verdicts.items() if v[NEW] != "accept")
    assert len(refused) * 2 > len(verdicts), (
        f"only {len(refused)}/{len(verdicts)} refused by {NEW}: "
        + "; ".join(f"{s}: {v[NEW]}" for s, v in verdicts.items() if v[NEW] == "accept"))
    for spec in SPECS:  # and each verdict is verl 0.9.1's own (a missing vLLM is the validator's environment)
        truth = _TRUTH_091.search(spec.read_text()).group(1)
        verl_accepts = truth == "accept" or "vllm version None not supported" in truth
        assert (verdicts[spec.stem][NEW] == "accept") == verl_accepts, (spec.stem, truth, verdicts[spec.stem][NEW])
