"""Admin commands: `argus user ...`, `argus token ...`, `argus admin token --reset`; `argus login`, `argus me`."""

from __future__ import annotations

from pathlib import Path

import typer

from argus.cli.client import CliConfig
from argus.cli.common import Output, client, console, emit, fail, handle_errors, output_option, table, when

user_app = typer.Typer(help="Manage users (admin).", no_args_is_help=True)
token_app = typer.Typer(help="Manage API tokens (admin).", no_args_is_help=True)
local_app = typer.Typer(help="Operate the platform: audit log, pruning (admin token), and `token --reset` "
                             "(on the server's machine, through its state directory, no token needed).",
                        no_args_is_help=True)


@user_app.command("create")
@handle_errors
def user_create(name: str, admin: bool = typer.Option(False, "--admin", help="make an administrator"),
                token: bool = typer.Option(True, "--token/--no-token", help="also create a first API token")) -> None:
    """Create a user (and their home), and print a first token for them."""
    c = client()
    u = c.post("/api/v2/users", json={"name": name, "is_admin": admin})
    console.print(f"created user {u['name']}")
    if token:
        t = c.post(f"/api/v2/users/{name}/tokens", json={"name": "initial"})
        console.print(f"token: {t['token']}")


@user_app.command("list")
@handle_errors
def user_list(output: Output = output_option()) -> None:
    users = client().get("/api/v2/users")
    if emit(users, output):
        return
    table(["USER", "ADMIN", "DISABLED", "MAX GPUS", "MAX TASKS", "CREATED"],
          ((u["name"], u["is_admin"], u["disabled"], _limit(u.get("max_gpus")), _limit(u.get("max_running_tasks")),
            when(u["created_at"])) for u in users))


def _limit(value: int | None) -> str:
    return "default" if value is None else str(value)


def _limit_arg(flag: str, value: str | None) -> dict[str, int | None]:
    if value is None:
        return {}
    if value.lower() == "default":
        return {flag: None}
    try:
        return {flag: int(value)}
    except ValueError:
        fail(f"--{flag.replace('_', '-')} must be a whole number or 'default', not {value!r}")


@user_app.command("limits")
@handle_errors
def user_limits(
    name: str,
    max_gpus: str | None = typer.Option(None, "--max-gpus", help="GPUs the user's tasks may hold at once "
                                        "(a number, or 'default' for the platform's)"),
    max_running_tasks: str | None = typer.Option(None, "--max-running-tasks", help="tasks the user may run at "
                                                 "once (a number, or 'default')"),
    quota_bytes: str | None = typer.Option(None, "--quota-bytes", help="storage quota of the user's home in bytes "
                                           "(a number, or 'default' for the platform's)"),
    output: Output = output_option(),
) -> None:
    """Show or set a user's own limits; the scheduler applies them on its next pass, the file store at once."""
    body = {**_limit_arg("max_gpus", max_gpus), **_limit_arg("max_running_tasks", max_running_tasks),
            **_limit_arg("quota_bytes", quota_bytes)}
    c = client()
    if body:
        u = c.request("PATCH", f"/api/v2/users/{name}", json=body)
    else:
        u = next((u for u in c.get("/api/v2/users") if u["name"] == name), None)
        if u is None:
            fail(f"no user named {name!r}")
    if emit(u, output):
        return
    console.print(f"{u['name']}: max GPUs {_limit(u.get('max_gpus'))}, max running tasks "
                  f"{_limit(u.get('max_running_tasks'))}, storage quota {_limit(u.get('quota_bytes'))}", markup=False)


@user_app.command("disable")
@handle_errors
def user_disable(name: str) -> None:
    """Disable a user: their tokens, passwords and keys stop working."""
    client().post(f"/api/v2/users/{name}/disable")
    console.print(f"disabled {name}")


@user_app.command("enable")
@handle_errors
def user_enable(name: str) -> None:
    client().post(f"/api/v2/users/{name}/enable")
    console.print(f"enabled {name}")


@token_app.command("create")
@handle_errors
def token_create(user: str, name: str | None = typer.Option(None, "--name")) -> None:
    """Create an API token for a user; it is shown only once."""
    t = client().post(f"/api/v2/users/{user}/tokens", json={"name": name})
    console.print(f"token: {t['token']}")


@token_app.command("list")
@handle_errors
def token_list(user: str) -> None:
    table(["ID", "PREFIX", "NAME", "CREATED", "REVOKED"],
          ((t["id"], t["prefix"] + "…", t["name"], t["created_at"][:19], (t["revoked_at"] or "")[:19])
           for t in client().get(f"/api/v2/users/{user}/tokens")))


@token_app.command("revoke")
@handle_errors
def token_revoke(user: str, token_id: int) -> None:
    client().delete(f"/api/v2/users/{user}/tokens/{token_id}")
    console.print(f"revoked token {token_id} of {user}")


@local_app.command("token")
def admin_token(
    reset: bool = typer.Option(False, "--reset", help="revoke the admin's tokens and print a new one"),
    state_dir: Path | None = typer.Option(None, "--state-dir", help="the server's state directory [default: ~/.argus]"),
) -> None:
    """Give the admin a new token (the one printed at first start is shown only once).

    Writes straight into the state directory's database: being able to do that is the proof of
    being the operator. Works with the server stopped or running; the old admin tokens stop working.
    """
    if not reset:
        typer.echo("error: admin tokens are stored only as hashes and cannot be shown again; "
                   "`argus admin token --reset` revokes them and prints a new one", err=True)
        raise typer.Exit(2)
    from argus.cli.startup import settings_or_exit
    from argus.server import StartError, reset_admin_token_in

    settings = settings_or_exit(state_dir=state_dir)
    try:
        token = reset_admin_token_in(settings)
    except StartError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"admin token: {token}")


@handle_errors
def me(output: Output = output_option()) -> None:
    """Show who you are, where your home is, and the `sftp` command that logs you in."""
    m = client().get("/api/v2/me")
    if emit(m, output):
        return
    console.print(f"{m['name']}{' (admin)' if m['is_admin'] else ''}  home: {m['home']}", markup=False)
    if m.get("sftp"):
        console.print(f"files: {m['sftp']}", markup=False)


@handle_errors
def login(url: str = typer.Option(..., "--url", prompt=True),
          token: str | None = typer.Option(None, "--token", help="an API token (asked for when neither --token nor "
                                                                 "--user is given)"),
          user: str | None = typer.Option(None, "--user", help="sign in with your user name and password instead "
                                                               "(local, or your directory/LDAP one): a new token is "
                                                               "made for this machine")) -> None:
    """Save the server URL and your token to ~/.config/argus/cli.yaml (mode 600)."""
    from argus.cli.client import ArgusClient

    url = url.rstrip("/")
    if user:
        import socket

        password = typer.prompt("password", hide_input=True)
        made = ArgusClient(url, None).post("/api/v2/session/token", json={
            "user": user, "password": password, "name": f"argus login on {socket.gethostname()}"[:128]})
        token = made["token"]
    elif token is None:
        token = typer.prompt("Token", hide_input=True)
    cfg = CliConfig(url=url, token=token)

    who = ArgusClient(cfg.url, cfg.token).get("/api/v2/me")
    path = cfg.save()
    console.print(f"logged in as {who['name']}; saved {path}")


def register(app: typer.Typer) -> None:
    app.add_typer(user_app, name="user")
    app.add_typer(token_app, name="token")
    app.add_typer(local_app, name="admin")
    app.command("me")(me)
    app.command("login")(login)
