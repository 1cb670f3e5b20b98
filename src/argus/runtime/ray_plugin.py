"""The Ray runtime-env plugin that puts every worker process of an Argus node in its owner's jail.

Loaded by Ray's per-node runtime-env agent (``RAY_RUNTIME_ENV_PLUGINS`` in the environment
of ``ray start``), so it runs in a trusted process no task can reach. Every Ray worker
whose runtime_env is not empty — a job's supervisor and driver, verl's TaskRunner, its
GPU workers, rollout servers, any actor a task creates — is set up by that agent, and this
plugin turns the worker's interpreter command into ``bwrap … -- <interpreter>``.

Why a job-level ``py_executable`` is not enough, and what this adds (measured with Ray
2.60, see tests/e2e/test_jail.py):

* a task can give an actor its own ``runtime_env={"py_executable": …}``, or set
  ``argus_jail`` to ``None``; Ray's agent calls a plugin only when its key is present,
  so this plugin hooks the agent's per-plugin step and runs for *every* runtime_env,
  last (after ``py_executable``), wrapping whatever interpreter the task asked for;
* fields that make the agent itself run user-chosen code or mounts outside the jail
  (``pip``, ``uv``, ``conda``, ``container``, ``image_uri``, ``py_modules``,
  ``working_dir``, ``java_jars``, profilers) are refused before any plugin runs;
* the runtime_env's ``env_vars`` are applied *inside* the jail (``bwrap --setenv``), never
  to the shell that starts it: ``LD_PRELOAD``, ``BASH_ENV`` or ``PATH`` in a task's
  env_vars would otherwise run code before the jail exists;
* the owner comes from the signed ``argus_jail`` value (:func:`argus.runtime.jail.verify`);
  a missing or forged one refuses the worker.

A worker whose runtime_env is completely empty never reaches the agent (Ray starts it
directly); Argus jobs always carry env_vars, which Ray merges into every child's
runtime_env, so that case is a foreign driver, covered in ARCHITECTURE §7's threat model.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any

from ray._private.runtime_env.context import RuntimeEnvContext
from ray._private.runtime_env.plugin import RuntimeEnvPlugin

from argus.runtime.jail import CONFIG_ENV, FIELD, JailConfig, JailError, verify, wrap_command

ALLOWED_FIELDS = frozenset({"env_vars", "py_executable", "config", FIELD, "worker_process_setup_hook",
                            "_ray_release", "_ray_commit", "_inject_current_ray", "eager_install"})
_UNDEFINED = re.compile(r"\$\{[A-Z0-9_]+\}")
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")  # as os.path.expandvars


def refuse_foreign_fields(runtime_env: Any) -> None:
    """Fields that would make the agent install, mount or download user-chosen things outside the jail."""
    bad = sorted(k for k, v in dict(runtime_env).items() if v is not None and k not in ALLOWED_FIELDS)
    if bad:
        raise JailError(f"runtime_env field(s) {', '.join(bad)} are not available on Argus nodes: they would run "
                        f"outside the task's jail. Use the training environment as installed, put helper code in "
                        f"$HOME/code (on PYTHONPATH), and set variables with env_vars")


def expand_env(env_vars: dict[str, str], base: dict[str, str]) -> dict[str, str]:
    """Ray's ``${VAR}`` expansion (``update_envs``), done here because the values move into the jail.

    Empty entries of a path list (``code:${PYTHONPATH}`` with PYTHONPATH unset) are dropped:
    an empty PYTHONPATH entry means "the current directory".
    """
    out: dict[str, str] = {}
    for key, value in env_vars.items():
        expanded = _VAR.sub(lambda m: base.get(m.group(1) or m.group(2), m.group(0)), value)
        expanded = _UNDEFINED.sub("", expanded)
        if key.endswith("PATH") and ":" in expanded:
            expanded = ":".join(p for p in expanded.split(":") if p)
        out[key] = expanded
    return out


class JailPlugin(RuntimeEnvPlugin):
    name = FIELD
    priority = 100  # the last plugin: it wraps the interpreter every other plugin chose

    def __init__(self) -> None:
        path = os.environ.get(CONFIG_ENV)
        if not path:
            raise RuntimeError(f"{CONFIG_ENV} is not set: the Argus jail plugin needs the node's jail config")
        self.config = JailConfig.load(path)
        self.key = self.config.key_file.read_bytes()
        _hook_agent(self)

    def modify_context(self, uris: list[str], runtime_env: Any, context: RuntimeEnvContext,
                       logger: logging.Logger) -> None:
        refuse_foreign_fields(runtime_env)
        user = verify(self.key, runtime_env.get(FIELD))
        if context.command_prefix or context.override_worker_entrypoint:
            raise JailError("a runtime_env that changes how workers start is not available on Argus nodes")
        env = expand_env(dict(context.env_vars), dict(os.environ))
        context.env_vars = {}
        context.py_executable = wrap_command(self.config, user, context.py_executable, env)
        logger.info("argus: worker of %s runs in its jail", user)


def _hook_agent(plugin: JailPlugin) -> None:
    """Make the agent run ``plugin`` for every runtime_env, not only those that name it.

    Ray's ``create_for_plugin_if_needed`` skips a plugin whose key is absent or None; the
    agent calls it once per plugin, ``working_dir`` first. The replacement refuses foreign
    fields before the first plugin runs and always calls this plugin's ``modify_context``.
    """
    import sys

    # The agent's main imports its module as the top-level name ``runtime_env_agent`` (it puts its
    # own folder on sys.path), so the copy that runs is that one, not the package path.
    modules = [m for name in ("runtime_env_agent", "ray._private.runtime_env.agent.runtime_env_agent")
               if (m := sys.modules.get(name)) is not None and hasattr(m, "create_for_plugin_if_needed")]
    if not modules:
        from ray._private.runtime_env.agent import runtime_env_agent

        modules = [runtime_env_agent]
    original = getattr(modules[0].create_for_plugin_if_needed, "__wrapped__", modules[0].create_for_plugin_if_needed)

    async def create_for_plugin_if_needed(runtime_env, plugin_, uri_cache, context, logger=None):  # noqa: ANN001, ANN202
        refuse_foreign_fields(runtime_env)
        if plugin_ is plugin or getattr(plugin_, "name", None) == FIELD:
            plugin.modify_context([], runtime_env, context, logger or logging.getLogger(__name__))
            return
        if logger is None:
            await original(runtime_env, plugin_, uri_cache, context)
        else:
            await original(runtime_env, plugin_, uri_cache, context, logger)

    create_for_plugin_if_needed.__wrapped__ = original  # type: ignore[attr-defined]
    for module in modules:
        module.create_for_plugin_if_needed = create_for_plugin_if_needed
