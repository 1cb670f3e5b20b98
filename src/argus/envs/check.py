"""The admission check of a task's ``env:``: it exists, this user may use it, it passed its last check,
and it can run what the spec asks for.

* an unknown name is refused with the environments the user can name (``argus env list``);
* a user's own environment (``~/envs/<name>``) is theirs alone: another user's is "unknown";
* basic specs are verl 0.9 configs (``argus.core.builders``): an environment whose verl the
  templates are not written for is refused with the fix (an advanced spec, or a 0.9 environment);
* a PPO/GRPO task in an environment with no rollout engine is refused here, not after an hour
  in the queue; the engine named by the spec must be the environment's (``rollout_name``,
  ``actor_rollout_ref.rollout.name``);
* CPU training (``device: cpu``) needs an environment with Argus's verl CPU platform
  (``cpu_platform`` in its probe); such an environment trains on CPU only, so a verl task that
  reserves GPUs there is refused with the fix (``device: cpu``, or a GPU environment);
* an lm-eval evaluation (``argus.jobs.lm_eval``) needs an environment with the ``lm_eval`` package
  (``lm_eval`` in its probe): refused here with the environments that have it, rather than failing
  on the import after the queue. A probe from before this check cannot tell: only a warning then.
"""

from __future__ import annotations

from argus.core.admission import Admitted, CheckOutcome, EnvChoices
from argus.core.command import PPO_ENTRY
from argus.core.evaluation import LM_EVAL_MODULE
from argus.core.messages import msg
from argus.core.taskspec import BasicTaskSpec
from argus.envs.registry import EnvError, Environment, Registry
from argus.errors import FieldError
from argus.launcher.kernels import rollout_engine


def rollout_name(admitted: Admitted) -> str | None:
    """The rollout engine a PPO/GRPO task asks for (basic: ``rollout_name``; advanced: the last override)."""
    spec = admitted.spec
    if isinstance(spec, BasicTaskSpec):
        if spec.workload == "sft":
            return None
        named = [o.split("=", 1)[1] for o in spec.overrides if o.lstrip("+").startswith("actor_rollout_ref.rollout.name=")]
        return (named[-1] if named else spec.rollout_name).strip("'\"")
    if admitted.entry_module != PPO_ENTRY or admitted.command_expanded is None:
        return None
    # the launcher's reading of the same command (launcher.kernels), verl's default rollout when unnamed
    return rollout_engine(["bash", "-lc", admitted.command_expanded]) or "vllm"


class EnvCheck:
    """Callable SpecCheck; runs before verl's checks, which use the same environment's validator."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def __call__(self, admitted: Admitted, user: str, template: list[str]) -> CheckOutcome:
        out = CheckOutcome()
        spec = admitted.spec
        try:
            env = self.registry.resolve(spec.env, user)
        except EnvError as exc:
            out.errors.append(FieldError("env", spec.env or self.registry.default, str(exc)))
            return out
        out.info["env"] = f"{env.name} (verl {env.verl})"  # shown with the accepted task
        if isinstance(spec, BasicTaskSpec) and not env.templates:
            out.errors.append(FieldError("env", env.name, f"the basic {spec.workload} template is a verl 0.9 config "
                                         f"and environment {env.name!r} has verl {env.verl}: submit an advanced spec "
                                         "(kind: advanced, the verl command as you would run it) to this environment, "
                                         "or name one of the template environments (argus env list)"))
        self._check_device(admitted, env, out)
        self._check_rollout(admitted, env, out)
        self._check_lm_eval(admitted, env, out)
        return out

    def _check_lm_eval(self, admitted: Admitted, env: Environment, out: CheckOutcome) -> None:
        if admitted.entry_module != LM_EVAL_MODULE or env.probe.get("lm_eval") is True:
            return
        if "lm_eval" not in env.probe:
            out.warnings.append(msg("warn.env_lm_eval_unknown", env=repr(env.name), name=env.name).text)
            return
        having = [e.name for e in self.registry.visible(None) if e.ok and e.probe.get("lm_eval")]
        named = f" such as {', '.join(having)}" if having else " (verl-0.9.1-vllm-cpu's lock has it)"
        out.errors.append(FieldError("env", env.name, f"environment {env.name!r} has no lm_eval package, which an "
                                     f"lm-eval evaluation runs: name an environment with lm-eval in env:{named}, "
                                     "or add lm-eval to your own environment's requirements (argus env list)"))

    def _check_device(self, admitted: Admitted, env: Environment, out: CheckOutcome) -> None:
        spec = admitted.spec
        cpu_env = bool(env.probe.get("cpu_platform"))
        if spec.device == "cpu" and not cpu_env:
            cpu_envs = [e.name for e in self.registry.visible(None) if e.ok and e.probe.get("cpu_platform")]
            named = f" such as {', '.join(cpu_envs)}" if cpu_envs else " (an admin builds one: argus env build verl-0.9.1-vllm-cpu)"
            out.errors.append(FieldError("device", "cpu", f"environment {env.name!r} cannot train on CPU (it has no "
                                         f"verl CPU platform): name a CPU training environment in env:{named}, or "
                                         "drop device: cpu to train on GPUs"))
        elif spec.device == "gpu" and cpu_env and spec.n_gpus_per_node > 0 and admitted.entry_module is not None \
                and admitted.entry_module.startswith("verl."):
            out.errors.append(FieldError("device", "gpu", f"environment {env.name!r} trains on CPU only (verl's CPU "
                                         f"platform, no CUDA): add device: cpu (n_gpus_per_node then counts CPU "
                                         "training workers), or name a GPU environment in env: (argus env list)"))

    @staticmethod
    def _check_rollout(admitted: Admitted, env: Environment, out: CheckOutcome) -> None:
        wanted = rollout_name(admitted)
        engines = list(env.probe.get("rollout_engines") or [])
        if wanted is None or wanted in engines:
            return
        fld = "rollout_name" if isinstance(admitted.spec, BasicTaskSpec) else "command: actor_rollout_ref.rollout.name"
        have = f"it has {', '.join(engines)}" if engines else "it has no rollout engine: a CPU or SFT-only environment"
        message = (f"{admitted.spec.workload} needs the {wanted} rollout engine and environment {env.name!r} does not "
                   f"have it ({have}); name an environment with {wanted} in env: (argus env list)")
        if not engines:  # a CPU environment validates and runs everything up to the rollout, where the launcher stops
            out.warnings.append(msg("warn.env_no_rollout_engine", workload=admitted.spec.workload, engine=wanted,
                                    env=repr(env.name)).text)
        else:
            out.errors.append(FieldError(fld, wanted, message))


def environment_choices(registry: Registry) -> EnvChoices:
    """The other environments a refused advanced spec is tried in: the ones its user may name that passed their
    check and hold another verl than the spec's environment, newest verl first."""

    def choices(name: str | None, user: str) -> list[tuple[str, str]]:
        try:
            current = registry.resolve(name, user)
        except EnvError:
            return []  # refused on env: already
        others = [e for e in registry.visible(user) if e.ok and e.verl and e.verl != current.verl]
        others.sort(key=lambda e: tuple(int(p) if p.isdigit() else 0 for p in e.verl.split(".")), reverse=True)
        return [(e.name, e.verl) for e in others]

    return choices
