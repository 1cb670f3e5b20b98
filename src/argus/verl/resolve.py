"""Resolving a composed verl config the way verl will, and listing every value that may name a path.

Runs inside the validator child (``argus.verl.worker``), in the *training* environment:
stdlib + omegaconf only, like ``messages.py``. verl resolves its whole config at start-up
(``OmegaConf.resolve`` in ``main_ppo``), so the values returned here are the values the
trainer will use; the server then applies Argus's path rules to each
(``argus.core.pathrules``). Which values are returned, with their key:

* every resolved string leaf (list items and nested values included, under the leaf's
  key) that contains ``/`` or starts with ``~`` or ``.`` — i.e. anything that could name a
  place other than a plain name inside the task's job dir. The rule is on the *value*, not
  the key, so a path hidden in a key with an unusual name is still seen; the server decides
  by the key which rules (input, output, data, reward) apply;
* Hydra's own output locations ``hydra.run.dir`` / ``hydra.sweep.dir`` and
  ``hydra.searchpath`` from the hydra node (not part of the trainer's config);
* a leaf that cannot be resolved is an error naming the key: verl would fail on it too.

Resolution never reads the server's environment: ``lock_resolvers`` replaces the
resolvers that read the environment or build config from strings (``oc.env``, ``env``,
``oc.decode``, ``oc.create``) with ones that refuse. Admission refuses them in the text
first; this is the second lock, for configs the text scan did not see.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

REFUSED_RESOLVERS = ("oc.env", "env", "oc.decode", "oc.create")
HYDRA_PATH_KEYS = ("hydra.run.dir", "hydra.sweep.dir", "hydra.searchpath")

# Keys whose values the server needs for its own checks (datasets, reward, token lengths).
RESOLVED_KEYS = (
    "data.train_files", "data.val_files", "data.prompt_key", "data.max_prompt_length", "data.messages_key",
    "data.max_length", "data.train_batch_size", "actor_rollout_ref.model.path", "model.path",
    "reward.custom_reward_function.path", "reward.custom_reward_function.name", "algorithm.adv_estimator",
    "custom_reward_function.path", "custom_reward_function.name",  # where verl < 0.9 reads the reward
    "data.multiturn.enable", "data.multiturn.messages_key", "data.response_key",  # verl < 0.9's SFT columns
    "trainer.nnodes", "trainer.n_gpus_per_node", "data.truncation",
)


_REFUSED_PREFIX = "the '"


class RefusedResolver(ValueError):
    """A task's config used a resolver that would read the server's environment or hidden config."""


def lock_resolvers() -> None:
    from omegaconf import OmegaConf

    for name in REFUSED_RESOLVERS:
        def refuse(*_args: Any, _name: str = name) -> Any:
            raise RefusedResolver(f"the '{_name}' resolver is not allowed in a task (it reads the environment "
                                  "or builds config Argus cannot check); write the value itself")

        OmegaConf.register_new_resolver(name, refuse, replace=True)


def hydra_values(full: Any) -> dict[str, tuple[Any, str | None]]:
    """``HYDRA_PATH_KEYS`` resolved in the whole composition (they may interpolate the trainer's keys):
    read before the worker drops the hydra node, for ``resolved_paths``."""
    return {key: _select(full, key) for key in HYDRA_PATH_KEYS}


def resolved_paths(cfg: Any, hydra: dict[str, tuple[Any, str | None]]) -> tuple[list[dict[str, Any]],
                                                                                list[dict[str, Any]]]:
    """([{"key", "value"}] for every value that may name a path, [{"key", "value", "message"}] errors).

    ``cfg`` is the trainer's config (no hydra node), ``hydra`` its hydra paths (``hydra_values``).
    """
    from omegaconf import OmegaConf

    paths: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    try:
        leaves = list(_leaves(OmegaConf.to_container(cfg, resolve=True), ""))
    except Exception:  # noqa: BLE001 - find the keys that fail, one by one
        leaves = []
        refused: dict[str, tuple[str, str]] = {}  # one error per refused resolver use, at the key that wrote it
        for key, raw in _leaves(OmegaConf.to_container(cfg, resolve=False), ""):
            value, problem = _select(cfg, key)
            if problem is None:
                leaves.extend(_leaves(value, key))
            elif problem.startswith(_REFUSED_PREFIX):
                used_here = "${" + problem.split("'")[1] + ":" in str(raw)
                if problem not in refused or (used_here and not refused[problem][1]):
                    refused[problem] = (key, str(raw) if used_here else "")
            else:
                errors.append({"key": key, "value": None, "message": f"{key} cannot be resolved: {problem}"})
        for problem, (key, raw) in refused.items():
            errors.append({"key": key, "value": raw or None, "message": f"{key}: {problem}"})
    for key in HYDRA_PATH_KEYS:
        value, problem = hydra[key]
        if problem:
            errors.append({"key": key, "value": None, "message": f"{key} cannot be resolved: {problem}"})
        elif value is not None:
            leaves.extend(_leaves(value, key))
    for key, value in leaves:
        if isinstance(value, str) and ("/" in value or value.startswith(("~", "."))):
            paths.append({"key": key, "value": value})
    return paths, errors


def _select(cfg: Any, key: str) -> tuple[Any, str | None]:
    from omegaconf import Container, OmegaConf

    try:
        value = OmegaConf.select(cfg, key, throw_on_resolution_failure=True, throw_on_missing=False)
        if isinstance(value, Container):
            value = OmegaConf.to_container(value, resolve=True)
        return value, None
    except Exception as exc:  # noqa: BLE001 - OmegaConf wraps resolver errors in several types
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        marker = f"{RefusedResolver.__name__} raised while resolving interpolation: "
        return None, text.split(marker, 1)[1] if marker in text else text


def _leaves(node: Any, key: str) -> Iterator[tuple[str, Any]]:
    """(key, value) for every scalar; list items keep their list's key (errors point at the override)."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, f"{key}.{k}" if key else str(k))
    elif isinstance(node, list | tuple):
        for v in node:
            yield from _leaves(v, key)
    else:
        yield key, node
