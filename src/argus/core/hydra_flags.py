"""Hydra's own command-line flags in a verl command (``--config-path``, ``--config-name``, ...).

verl's entry points are ``@hydra.main`` programs, so everything after the module is either a
Hydra override (``key=value``) or one of Hydra's flags. The config flags decide *which* config
the overrides apply to: all of verl's megatron examples run ``--config-path=config
--config-name=ppo_megatron_trainer``. Admission must compose that config, not ``ppo_trainer``,
and must know where it comes from:

* no ``--config-path``, or ``config`` / ``./config``: verl's packaged configs (Hydra resolves
  a relative path against the entry module's folder, ``verl/trainer/``);
* an absolute folder: the user's own configs (it must be under ``$HOME``);
* ``pkg://verl.trainer.config``: the packaged configs, spelled as a Hydra search path.

Flags that make Hydra do something other than run one training job (``--multirun`` sweeps,
``--cfg`` / ``--help`` / ``--info`` printing and exiting) are refused with the reason: a task
is one run that holds GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from argus.core.messages import field_error, part
from argus.errors import FieldError

PACKAGED = "pkg://verl.trainer.config"
# Hydra's argparse options (hydra/_internal/utils.py get_args_parser): long name, short name.
_VALUE_FLAGS = {"--config-path": "-cp", "--config-name": "-cn", "--config-dir": "-cd"}
_HARMLESS = {"--run": "-r"}
_REFUSED = {  # long name: (short name, why: core.messages part.hydra_*)
    "--multirun": ("-m", "part.hydra_multirun"),  # a sweep of several jobs inside one task
    "--cfg": ("-c", "part.hydra_cfg"),
    "--help": ("-h", "part.hydra_help"),
    "--hydra-help": ("", "part.hydra_help"),
    "--info": ("-i", "part.hydra_info"),
    "--version": ("", "part.hydra_version"),
    "--shell-completion": ("-sc", "part.hydra_completion"),
    "--resolve": ("", "part.hydra_cfg_only"),
    "--package": ("-p", "part.hydra_cfg_only"),
    "--experimental-rerun": ("", "part.hydra_rerun"),
}


@dataclass
class HydraFlags:
    """The config flags of one command and the arguments left once they are taken out."""

    config_path: str | None = None
    config_name: str | None = None
    config_dirs: list[str] = field(default_factory=list)
    rest: list[str] = field(default_factory=list)

    @property
    def given(self) -> bool:
        return self.config_path is not None or self.config_name is not None or bool(self.config_dirs)

    @property
    def name(self) -> str | None:
        """The config name as Hydra looks it up (``ppo_megatron_trainer.yaml`` → ``ppo_megatron_trainer``)."""
        if self.config_name is None:
            return None
        n = self.config_name.strip()
        return n[: -len(".yaml")] if n.endswith(".yaml") else n

    @property
    def packaged(self) -> bool:
        """Whether the primary config folder is verl's own (``verl/trainer/config``)."""
        return self.config_path is None or is_packaged_path(self.config_path)


def is_packaged_path(path: str) -> bool:
    p = path.strip().rstrip("/")
    return p in ("config", "./config", PACKAGED, "pkg://verl/trainer/config")


def split_hydra_flags(args: list[str], fld: str = "command") -> HydraFlags | list[FieldError]:
    """Take Hydra's flags out of a module's arguments (``--flag=value`` or ``--flag value``)."""
    flags = HydraFlags()
    errors: list[FieldError] = []
    by_name = {**{s: long for long, s in _VALUE_FLAGS.items()}, **{long: long for long in _VALUE_FLAGS}}
    harmless = {*_HARMLESS, *_HARMLESS.values()}
    refused = {**{long: long for long in _REFUSED}, **{s: long for long, (s, _) in _REFUSED.items() if s}}
    i = 0
    while i < len(args):
        a = args[i]
        if not a.startswith("-"):
            flags.rest.append(a)
            i += 1
            continue
        name, eq, value = a.partition("=")
        if name in by_name:
            if not eq:
                if i + 1 >= len(args):
                    errors.append(field_error(fld, a, "command.hydra_flag_value", flag=name))
                    break
                value = args[i + 1]
                i += 1
            long = by_name[name]
            if long == "--config-path":
                flags.config_path = value
            elif long == "--config-name":
                flags.config_name = value
            else:
                flags.config_dirs.append(value)
        elif name in refused:
            errors.append(field_error(fld, a, "command.hydra_flag_refused", flag=refused[name],
                                      why=part(_REFUSED[refused[name]][1])))
        elif name not in harmless:
            errors.append(field_error(fld, a, "command.hydra_flag_unknown"))
        i += 1
    if flags.config_name is not None and not flags.name:
        errors.append(field_error(fld, "--config-name", "command.config_name_empty"))
    return errors or flags
