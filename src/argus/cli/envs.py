"""`argus env`: training environments (issue 22) — list, build from a lock, register, check, remove.

* ``list`` asks the server (what your tasks can name in ``env:``);
* ``register`` / ``remove`` are admin requests to the server;
* ``build``, ``check``, ``catalog``, ``lock`` and ``wheelhouse`` run on this machine: building
  needs the shared filesystem (``--data-root``) and minutes of downloads; ``check`` probes every
  environment with *this node's* view of it (run it on each worker: the doctor per node).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import typer

from argus.cli.common import Output, client, console, emit, fail, handle_errors, output_option, table, when

env_app = typer.Typer(help="Training environments: the Python prefixes (verl, torch, a rollout engine) tasks run in.",
                      no_args_is_help=True)


def _registry(data_root: Path | None, state_dir: Path | None):  # noqa: ANN202 - argus.envs.registry.Registry
    from argus.cli.startup import settings_or_exit
    from argus.envs.registry import Registry

    return Registry.for_settings(settings_or_exit(data_root=data_root, state_dir=state_dir))


DATA_ROOT = typer.Option(None, "--data-root", help="the shared filesystem [default: the server's, from settings]")
STATE_DIR = typer.Option(None, "--state-dir", help="embedded mode: the state dir holding the data root")


def _engines(e: dict) -> str:
    """The rollout engines, and "(cpu)" where the environment trains on CPU (``device: cpu``)."""
    engines = ",".join(e.get("rollout_engines") or []) or "-"
    return f"{engines} (cpu)" if e.get("cpu_training") else engines


def _result(r: dict) -> str:
    if not r["ok"]:
        return "; ".join(r["problems"])
    made = r.get("generation")
    return f"ok, generated {made['tokens']} tokens in {made['seconds']} s" if made else "ok"


@handle_errors
def env_list(output: Output = output_option()) -> None:
    """The environments your tasks can name in `env:` (and which one a spec without it gets)."""
    out = client().get("/api/v2/envs")
    if emit(out, output):
        return
    table(["NAME", "VERL", "TORCH", "CUDA", "ROLLOUT", "TEMPLATES", "OK", "CHECKED", "DESCRIPTION"],
          ((("* " if e["name"] == out["default"] else "") + e["name"], e["verl"] or "-", e["torch"] or "-",
            e["torch_cuda"] or "-", _engines(e), "yes" if e["templates"] else "no",
            "ok" if e["ok"] else "BROKEN: " + "; ".join(e["problems"]), when(e["checked_at"]), e["description"])
           for e in out["environments"]), wrap=("DESCRIPTION", "OK"))
    console.print(f"* default (a spec without env:): {out['default']}", highlight=False)


@handle_errors
def env_register(
    name: str,
    python: str | None = typer.Option(None, "--python", help="the environment's interpreter (absolute path)"),
    prefix: str | None = typer.Option(None, "--prefix", help="or its prefix: a venv or an unpacked image"),
    description: str = typer.Option("", "--description"),
    output: Output = output_option(),
) -> None:
    """Register an environment built elsewhere (admin); the server checks its interpreter first."""
    out = client().post("/api/v2/envs", json={"name": name, "python": python, "prefix": prefix,
                                              "description": description})
    if not emit(out, output):
        console.print(f"registered {out['name']}: verl {out['verl']}, torch {out['torch']}, rollout "
                      f"{_engines(out)}", highlight=False)


@handle_errors
def env_remove(name: str, yes: bool = typer.Option(False, "--yes", "-y", help="do not ask")) -> None:
    """Remove a cluster environment (admin): refused while a task that is not over needs it."""
    if not yes:
        typer.confirm(f"remove environment {name} (a built one's files are deleted)?", abort=True)
    client().delete(f"/api/v2/envs/{name}")
    console.print(f"removed {name}", highlight=False)


def env_catalog(output: Output = output_option()) -> None:
    """The environments Argus ships a lock for (build one with `argus env build NAME`)."""
    from argus.envs import catalog

    rows = [{"name": e.name, "accelerator": e.accelerator, "python": e.python, "verl": e.verl,
             "rollout": list(e.rollout), "templates": e.templates, "lock_sha256": e.lock_sha256(),
             "pins": len(catalog.pins(e.lock.read_text())) if e.lock.is_file() else 0, "description": e.description}
            for e in catalog.entries()]
    if emit(rows, output):
        return
    table(["NAME", "ACCEL", "PYTHON", "VERL", "ROLLOUT", "TEMPLATES", "PINS", "LOCK", "DESCRIPTION"],
          ((r["name"], r["accelerator"], r["python"], r["verl"], ",".join(r["rollout"]) or "-",
            "yes" if r["templates"] else "no", r["pins"], (r["lock_sha256"] or "none")[:12], r["description"])
           for r in rows), wrap=("DESCRIPTION",))


@handle_errors
def env_build(
    name: str = typer.Argument(..., help="a catalog entry (argus env catalog)"),
    as_name: str | None = typer.Option(None, "--as", help="register it under another name"),
    python: str | None = typer.Option(None, "--python", help="the base interpreter [default: the lock's version]"),
    wheelhouse: Path | None = typer.Option(None, "--wheelhouse", help="install offline from this folder "
                                           "(made by `argus env wheelhouse` on a connected machine)"),
    find_links: list[str] = typer.Option([], "--find-links", help="also look for wheels here (repeatable)"),
    force: bool = typer.Option(False, "--force", help="rebuild an existing environment (swapped in when done)"),
    data_root: Path | None = DATA_ROOT,
    state_dir: Path | None = STATE_DIR,
) -> None:
    """Build a catalog environment from its lock onto the shared filesystem, check it, and register it."""
    from argus.envs import build, catalog

    entry = catalog.entry(name)
    if entry is None:
        fail(f"no catalog entry {name!r}; known: {', '.join(e.name for e in catalog.entries())}")
    reg = _registry(data_root, state_dir)
    env = build.build(entry, reg, name=as_name, python=python, links=find_links, wheelhouse=wheelhouse, force=force)
    console.print(f"built {env.name} at {env.prefix}: verl {env.verl}, lock {(env.lock_sha256 or '')[:12]}; "
                  f"tasks name it with env: {env.name}", highlight=False)
    for note in env.probe.get("notes") or []:
        console.print(f"note: {note}", highlight=False)


def env_check(
    names: list[str] = typer.Argument(None, help="environments to check [default: every cluster environment]"),
    data_root: Path | None = DATA_ROOT,
    state_dir: Path | None = STATE_DIR,
    generate: bool = typer.Option(False, "--generate", help="also generate a few tokens with each environment's "
                                  "vLLM on this node's device (a random tiny model, no download; minutes on a CPU)"),
    output: Output = output_option(),
) -> None:
    """Check environments as THIS node sees them (real imports, rollout engines, kernels, CUDA build vs
    driver) and record the result; exit 1 when one is broken. Run it on every worker."""
    import socket

    from argus.envs.registry import EnvError, generate_check

    reg = _registry(data_root, state_dir)
    wanted = names or [e.name for e in reg.visible(None)]
    results = []
    for n in wanted:
        try:
            result = reg.check(n).public()
            if generate and "vllm" in result["rollout_engines"] and result["ok"]:
                made = generate_check(result["python"])
                result["generation"] = made
                if "tokens" not in made:
                    result["ok"], result["problems"] = False, [*result["problems"], made["problem"]]
                else:
                    result["notes"] = [*result["notes"], f"vLLM generated {made['tokens']} tokens "
                                       f"({made['seconds']} s with the engine's start)"]
            results.append(result)
        except EnvError as exc:
            results.append({"name": n, "ok": False, "problems": [str(exc)], "verl": None, "torch": None,
                            "torch_cuda": None, "rollout_engines": [], "kernels": [], "notes": []})
    if not emit({"node": socket.gethostname(), "environments": results}, output):
        table(["NAME", "VERL", "TORCH", "CUDA", "ROLLOUT", "KERNELS", "RESULT"],
              ((r["name"], r["verl"] or "-", r["torch"] or "-", r["torch_cuda"] or "-", _engines(r),
                ",".join(r["kernels"]) or "-", _result(r)) for r in results),
              wrap=("RESULT",))
    if not all(r["ok"] for r in results):
        raise typer.Exit(1)


def env_lock(name: str) -> None:
    """Resolve a catalog entry's requirements.in again into its requirements.lock (for Argus developers)."""
    from argus.envs import catalog

    entry = catalog.entry(name)
    if entry is None:
        fail(f"no catalog entry {name!r}")
    subprocess.run(catalog.compile_argv(entry, entry.lock), check=True)
    console.print(f"{entry.lock}: {len(catalog.pins(entry.lock.read_text()))} pins, sha256 {entry.lock_sha256()}",
                  highlight=False)


def env_wheelhouse(name: str, folder: Path) -> None:
    """Download every wheel of a catalog lock (for its Python and platform) into FOLDER, for an offline build."""
    from argus.envs import build, catalog

    entry = catalog.entry(name)
    if entry is None:
        fail(f"no catalog entry {name!r}")
    import tempfile

    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        for argv in build.wheelhouse_commands(entry, folder, Path(work)):
            done = subprocess.run(argv)
            if done.returncode:
                raise typer.Exit(done.returncode)
    size = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    console.print(f"{folder}: {size / 2**30:.2f} GiB; on the GPU machine: argus env build {name} --wheelhouse "
                  f"{folder}", highlight=False)


def register(app: typer.Typer) -> None:
    env_app.command("list")(env_list)
    env_app.command("register")(env_register)
    env_app.command("remove")(env_remove)
    env_app.command("catalog")(env_catalog)
    env_app.command("build")(env_build)
    env_app.command("check")(env_check)
    env_app.command("lock")(env_lock)
    env_app.command("wheelhouse")(env_wheelhouse)
    app.add_typer(env_app, name="env")
