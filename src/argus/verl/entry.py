"""The admission check that the entry module exists in the training environment.

An allowlisted name is not a module: ``verl.trainer.fsdp_sft_trainer`` (removed in verl 0.9)
passes the allowlist and used to fail only after queueing, with ``No module named …`` in the
task log. The validator child runs the training interpreter, so it looks the module up there
(``argus.verl.worker.find_module``: found, not imported) and a missing one is refused with the
replacement when one is known. When no validator can answer, the check is skipped with a
warning (``settings.verl_validation: off`` skips it silently, as every verl check).
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath

from argus.core.admission import Admitted, CheckOutcome
from argus.core.messages import msg
from argus.core.paths import DataLayout
from argus.core.taskspec import AdvancedTaskSpec
from argus.errors import FieldError
from argus.settings import Settings
from argus.verl.check import ValidatorSource
from argus.verl.validator import ValidatorTimeout, ValidatorUnavailable, VerlValidator


class EntryModuleCheck:
    """Callable SpecCheck: refuse an advanced command whose module the training environment lacks."""

    def __init__(self, settings: Settings, validator: VerlValidator | None, *,
                 validators: ValidatorSource | None = None) -> None:
        self.settings = settings
        self.validator = validator
        self.validators = validators  # the task's environment's validator (argus.verl.check.ValidatorSource)

    def __call__(self, admitted: Admitted, user: str, template: list[str]) -> CheckOutcome:
        out = CheckOutcome()
        module = admitted.entry_module
        if self.settings.verl_validation == "off" or module is None or not isinstance(admitted.spec, AdvancedTaskSpec):
            return out  # basic templates name modules Argus knows exist
        validator, wanted = (self.validator, True) if self.validators is None else self.validators(admitted, user)
        if not wanted:
            return out  # an unknown environment: argus.envs.check says so
        if validator is None:
            out.warnings.append(msg("warn.module_unchecked_no_validator", module=module).text)
            return out
        try:
            resp = validator.request({"op": "find_module", "module": module}, self.settings.verl_timeout_s)
        except (ValidatorUnavailable, ValidatorTimeout) as exc:
            out.warnings.append(msg("warn.module_unchecked", module=module, error=str(exc)).text)
            return out
        if resp.get("found", True):
            return out
        replacement = resp.get("replacement")
        fork = fork_copy(module, DataLayout.at(self.settings.root).home(user))
        if fork is not None and not replacement:
            out.errors.append(FieldError("command", module, (
                f"module {module} is not in the training environment's verl: it belongs to your own copy of verl "
                f"($HOME/{fork}), and a task runs its environment's verl, never a copy in your home. Run "
                "verl.trainer.main_ppo (your reward as reward.custom_reward_function.path, your settings as "
                "overrides), or install your fork in an environment of your own (env: ~/envs/<name>, see "
                "`argus env --help`)")))
            return out
        fix = (f"; it was replaced by {replacement}: run '-m {replacement}'"
               if replacement else "; check the spelling against the allowlist and the installed verl")
        out.errors.append(FieldError("command", module, f"module {module} does not exist in the training environment{fix}",
                                     # verl's own successor of the module: a one-click fix that keeps the meaning
                                     fix={"replace": module, "with": replacement} if replacement else None))
        return out


def fork_copy(module: str, home: PurePosixPath, depth: int = 3) -> str | None:
    """The file in ``home/code`` (up to ``depth`` folders down, never through a symbolic link) that defines
    ``module`` when it is a verl module: a project's own fork of verl
    (``$HOME/code/<project>/verl/trainer/main_ppo_x.py``); its path under home."""
    if not module.startswith("verl."):
        return None
    tail = os.path.join(*module.split(".")) + ".py"
    code = os.path.join(str(home), "code")
    for top, dirs, _files in os.walk(code):  # os.walk does not follow symbolic links
        level = os.path.relpath(top, code).count(os.sep) + (top != code)
        if level >= depth:
            dirs.clear()
        dirs.sort()
        if "verl" in dirs:
            hit = os.path.join(top, tail)
            if os.path.isfile(hit) and not any(os.path.islink(q) for q in _chain(top, hit)):
                return os.path.relpath(hit, str(home))
    return None


def _chain(base: str, path: str) -> list[str]:
    """Every path from ``base`` (exclusive) down to ``path``: each must be a real folder or file."""
    parts = os.path.relpath(path, base).split(os.sep)
    return [os.path.join(base, *parts[: i + 1]) for i in range(len(parts))]
