"""The admission check that the entry module exists in the training environment.

An allowlisted name is not a module: ``verl.trainer.fsdp_sft_trainer`` (removed in verl 0.9)
passes the allowlist and used to fail only after queueing, with ``No module named …`` in the
task log. The validator child runs the training interpreter, so it looks the module up there
(``argus.verl.worker.find_module``: found, not imported) and a missing one is refused with the
replacement when one is known. When no validator can answer, the check is skipped with a
warning (``settings.verl_validation: off`` skips it silently, as every verl check).
"""

from __future__ import annotations

from argus.core.admission import Admitted, CheckOutcome
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
            out.warnings.append(f"could not check that module {module} exists in the training environment "
                                "(no verl validator is configured)")
            return out
        try:
            resp = validator.request({"op": "find_module", "module": module}, self.settings.verl_timeout_s)
        except (ValidatorUnavailable, ValidatorTimeout) as exc:
            out.warnings.append(f"could not check that module {module} exists in the training environment ({exc})")
            return out
        if resp.get("found", True):
            return out
        replacement = resp.get("replacement")
        fix = (f"; it was replaced by {replacement}: run '-m {replacement}'"
               if replacement else "; check the spelling against the allowlist and the installed verl")
        out.errors.append(FieldError("command", module,
                                     f"module {module} does not exist in the training environment{fix}"))
        return out
