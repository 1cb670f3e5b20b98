"""verl's checkpoint layout and resume settings, as pure functions (no I/O).

verl (0.9.1: ``RayPPOTrainer._save_checkpoint``, ``utils/checkpoint/checkpoint_handler.py``)
writes step ``N`` of a run into ``<trainer.default_local_dir>/global_step_N/`` — ``actor/``,
``critic/`` (PPO with a critic) and the data loader state ``data.pt`` for main_ppo; the model
shards and ``data_<rank>.pt`` directly in the step folder for the SFT trainer — and only
*then* writes the step number into ``<default_local_dir>/latest_checkpointed_iteration.txt``
(the SFT trainer through a rename, so atomically). That tracker is verl's own mark of a
finished step and is what its ``resume_mode=auto`` reads, so Argus uses the same rule:
**a step is complete when its number is at most the tracker's**. A higher step is being
written (or was cut off mid-write) and is never offered for resume or export. verl skips the
tracker when ``actor.checkpoint.async_save`` is on; such runs show no complete step.

Resuming uses verl's own keys: ``trainer.resume_mode=resume_path`` and
``trainer.resume_from_path=<…>/global_step_N`` (verl asserts ``global_step_`` is in the path and
takes the step number from it).
"""

from __future__ import annotations

import re
import shlex
from pathlib import PurePosixPath

from argus.core.paths import normalize

TRACKER = "latest_checkpointed_iteration.txt"
STEP_PREFIX = "global_step_"
STEP_RE = re.compile(r"global_step_(\d{1,12})")
DIR_KEY = "trainer.default_local_dir"
MODE_KEY = "trainer.resume_mode"
PATH_KEY = "trainer.resume_from_path"
RESUME_KEYS = (MODE_KEY, PATH_KEY)
DEFAULT_FOLDER = "checkpoints"  # below the job folder: what every basic template sets


def step_of(name: str) -> int | None:
    """``global_step_12`` → 12; anything else (``global_step_x``, ``tmp``) → None."""
    m = STEP_RE.fullmatch(name)
    return int(m.group(1)) if m else None


def command_words(argv: list[str]) -> list[str]:
    """The words of a task's command: a basic argv as is, an advanced ``bash -lc CMD`` split like a shell."""
    if len(argv) == 3 and argv[:2] == ["bash", "-lc"]:
        try:
            return shlex.split(argv[2], comments=True)
        except ValueError:
            return []
    return list(argv)


def last_value(words: list[str], key: str) -> str | None:
    """The value the last ``key=…`` (or ``+key=…``/``++key=…``) override gives: Hydra's last one wins."""
    value = None
    for w in words:
        name, sep, v = w.lstrip("+").partition("=")
        if sep and name == key:
            value = v
    return value


# verl 0.9.1's default ``trainer.default_local_dir`` is ``checkpoints/${trainer.project_name}/${trainer.experiment_name}``
# (relative: below the driver's working directory, the job folder) with these names per config.
_VERL_NAMES = {"verl.trainer.sft_trainer": ("gsm8k-sft", "test")}
_PPO_NAMES = ("verl_examples", "gsm8k")


def checkpoint_folder(argv: list[str], job_dir: PurePosixPath) -> PurePosixPath:
    """Where a task's checkpoints are: its ``trainer.default_local_dir`` when the command names a plain
    path (relative ones are below the job folder, the driver's working directory); for a verl trainer
    that names none, verl's default ``checkpoints/<project_name>/<experiment_name>``; else
    ``<job dir>/checkpoints``. An interpolated value (``${…}``) cannot be followed and falls back."""
    words = command_words(argv)
    value = last_value(words, DIR_KEY)
    if value is None:
        entry = next((words[i + 1] for i, w in enumerate(words[:-1]) if w == "-m" and words[i + 1] != "torch.distributed.run"),
                     "")
        if entry.startswith("verl.trainer."):
            project, experiment = _VERL_NAMES.get(entry, _PPO_NAMES)
            project = last_value(words, "trainer.project_name") or project
            experiment = last_value(words, "trainer.experiment_name") or experiment
            value = f"{DEFAULT_FOLDER}/{project}/{experiment}"
    if not value or "$" in value:
        return job_dir / DEFAULT_FOLDER
    return normalize(value, cwd=job_dir)


def resume_disabled(argv: list[str]) -> bool:
    """Did the user turn verl's resume off (``trainer.resume_mode=disable``)? Then a retry starts over."""
    return last_value(command_words(argv), MODE_KEY) == "disable"


def resume_overrides(step_folder: str) -> list[str]:
    return [f"{MODE_KEY}=resume_path", f"{PATH_KEY}={step_folder}"]


_SUFFIX_RE = re.compile(
    r"\s+" + re.escape(MODE_KEY) + r"=resume_path\s+(?:'" + re.escape(PATH_KEY) + r"=[^']*'|"
    + re.escape(PATH_KEY) + r"=\S+)\s*\Z")


def shell_word(word: str) -> str:
    """Shell-quote, but leave ``$HOME/…`` readable (Argus expands it before the shell sees the command)."""
    return word if re.fullmatch(r"[\w@%+=:,./$-]+", word) else shlex.quote(word)


def with_resume(argv: list[str], step_folder: str) -> list[str]:
    """``argv`` that resumes from ``step_folder``: earlier resume overrides replaced, the new ones last.

    A basic argv gets two more words; an advanced ``bash -lc CMD`` gets them appended to the end of
    ``CMD`` (the usual single ``python3 -m verl.trainer.main_ppo …`` line), replacing a suffix an
    earlier resume appended.
    """
    extra = resume_overrides(step_folder)
    if len(argv) == 3 and argv[:2] == ["bash", "-lc"]:
        cmd = _SUFFIX_RE.sub("", argv[2]).rstrip()
        return ["bash", "-lc", f"{cmd} {' '.join(map(shell_word, extra))}"]
    kept = [w for w in argv if w.lstrip("+").partition("=")[0] not in RESUME_KEYS]
    return [*kept, *extra]


def resume_spec(doc: dict, step_folder: str) -> dict:
    """A spec document (as submitted) that resumes from ``step_folder``: a basic spec's ``overrides``,
    an advanced spec's ``command``. Everything else stays as the user wrote it."""
    out = dict(doc)
    if out.get("kind") == "advanced":
        out["command"] = with_resume(["bash", "-lc", str(out.get("command") or "")], step_folder)[2]
        return out
    overrides = [o for o in (out.get("overrides") or []) if not (
        isinstance(o, str) and o.lstrip("+").partition("=")[0] in RESUME_KEYS)]
    out["overrides"] = [*overrides, *resume_overrides(step_folder)]
    return out
