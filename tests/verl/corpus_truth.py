"""verl 0.9.1's own config stage for one corpus spec, run apart from Argus: the truth the corpus is held to.

    python -m tests.verl.corpus_truth HOME SPEC.yaml...   (prints "<file>: accept" or "<file>: reject: <why>")

What verl does before training, in the order it does it, with nothing of Argus's:
``python3 -m <module>`` must find the module; Hydra composes the config the command names
(``--config-path`` / ``--config-name``, else the module's own) with every override, in struct
mode; ``main_ppo`` resolves it and runs ``validate_config``; the SFT trainer builds its engine,
optimizer, checkpoint and profiler configs and checks the batch size against the world size.
Only a critic given as a hub id is swapped for a local tiny model (validation never downloads).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import shlex
import sys
import warnings

import yaml

TINY = "models/tiny"


def verdict(spec_text: str, home: str) -> str:
    module, path, name, overrides = command_parts(spec_text, home)
    if importlib.util.find_spec(module) is None:
        return f"reject: no module {module}"
    kind = "sft" if module == "verl.trainer.sft_trainer" else "ppo"
    try:
        cfg = _compose(path, name, overrides)
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _validate(kind, cfg, home)
    except Exception as exc:  # noqa: BLE001 - whatever verl raises is its refusal
        return "reject: " + (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return "accept"


def _compose(path: str | None, name: str, overrides: list[str], *, resolve: bool = True):  # noqa: ANN202
    from hydra import compose, initialize_config_dir, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    GlobalHydra.instance().clear()
    if path is None or path.rstrip("/") in ("config", "./config"):
        ctx = initialize_config_module(config_module="verl.trainer.config", version_base=None)
    else:
        ctx = initialize_config_dir(config_dir=path, version_base=None)
    with ctx, contextlib.redirect_stdout(io.StringIO()):
        cfg = compose(config_name=name, overrides=overrides)
    if resolve:
        OmegaConf.resolve(cfg)  # main_ppo resolves the whole config first
    return cfg


def command_parts(spec_text: str, home: str) -> tuple[str, str | None, str, list[str]]:
    """(module, ``--config-path``, config name, overrides) of a corpus spec's command, ``$HOME`` filled in.

    Hydra's flags are read in both spellings (``--config-name=x`` and ``--config-name x``); the config
    name defaults to the module's own (``sft_trainer_engine`` for SFT, else ``ppo_trainer``)."""
    spec = yaml.safe_load(spec_text)
    words = shlex.split(spec["command"].replace("\\\n", " ").replace("$HOME", home))
    i = words.index("-m")
    module, args = words[i + 1], words[i + 2:]
    flags: dict[str, str] = {}
    overrides = []
    j = 0
    while j < len(args):
        flag, eq, value = args[j].partition("=")
        if flag in ("--config-path", "--config-name"):
            if not eq:
                j += 1
                value = args[j]
            flags[flag] = value
        else:
            overrides.append(args[j])
        j += 1
    default = "sft_trainer_engine" if module == "verl.trainer.sft_trainer" else "ppo_trainer"
    return module, flags.get("--config-path"), flags.get("--config-name", default).removesuffix(".yaml"), overrides


def _validate(kind: str, cfg, home: str) -> None:  # noqa: ANN001
    from omegaconf import open_dict
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    if kind == "sft":
        for section in ("engine", "optim", "checkpoint", "profiler"):
            omega_conf_to_dataclass(cfg[section])
        return
    from verl.trainer.ppo.utils import need_critic, need_reference_policy

    critic = need_critic(cfg)
    if critic and not os.path.isdir(str(cfg.critic.model.path)):
        with open_dict(cfg):
            cfg.critic.model.path = os.path.join(home, TINY)
            cfg.critic.model.tokenizer_path = None
    validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=critic)


def main() -> None:
    home = sys.argv[1]
    for path in sys.argv[2:]:
        with open(path) as f:
            text = f.read()
        one_line = re.sub(r"\s+", " ", verdict(text, home))
        print(f"{os.path.basename(path)}: {one_line}")


if __name__ == "__main__":
    main()
