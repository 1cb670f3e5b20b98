"""`argus files ls|put|get|rm|mkdir|mv`, `argus passwd`, `argus keys add|list|rm` (HTTP only).

put/get stream through httpx in 1 MiB chunks, so a 5 GB dataset never sits in memory.
Paths are the ones you see over SFTP: /datasets/x, /common/datasets/y.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import typer

from argus.cli.common import Output, client, console, emit, fail, handle_errors, output_option, table

files_app = typer.Typer(help="Your files (the SFTP layout) over HTTP.", no_args_is_help=True)
keys_app = typer.Typer(help="SSH public keys for SFTP logins.", no_args_is_help=True)
CHUNK = 1 << 20


def _read_chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            yield chunk


@files_app.command("ls")
@handle_errors
def ls(path: str = typer.Argument("/"), output: Output = output_option()) -> None:
    """List a folder (or show one file)."""
    out = client().get("/api/v2/files", params={"path": path})
    if emit(out, output):
        return
    entries = out.get("entries", [out])
    table(["TYPE", "SIZE", "MODE", "NAME"], ((e["type"], e["size"], e["mode"], e["name"]) for e in entries))


@files_app.command("put")
@handle_errors
def put(local: Path = typer.Argument(..., exists=True, dir_okay=False), remote: str = typer.Argument(...)) -> None:
    """Upload a file, creating missing folders; a remote path ending in / keeps the local name."""
    if remote.endswith("/"):
        remote += local.name
    parent = remote.rstrip("/").rsplit("/", 1)[0]
    if parent:
        client().post("/api/v2/files/mkdir", json={"path": parent, "parents": True})
    out = client().request("PUT", "/api/v2/files/content", params={"path": remote}, content=_read_chunks(local),
                           headers={"Content-Length": str(local.stat().st_size)})
    console.print(f"uploaded {out['path']} ({out['size']} bytes)", markup=False)


@files_app.command("get")
@handle_errors
def get(remote: str = typer.Argument(...), local: Path | None = typer.Argument(None)) -> None:
    """Download a file (to stdout with '-')."""
    if str(local) == "-":
        for chunk in client().stream("GET", "/api/v2/files/content", params={"path": remote}):
            sys.stdout.buffer.write(chunk)
        return
    target = local or Path(remote.rstrip("/").rsplit("/", 1)[-1])
    if target.is_dir():
        target = target / remote.rstrip("/").rsplit("/", 1)[-1]
    part = target.with_name(target.name + ".part")
    with part.open("wb") as f:
        for chunk in client().stream("GET", "/api/v2/files/content", params={"path": remote}):
            f.write(chunk)
    part.replace(target)
    console.print(f"downloaded {remote} → {target}", markup=False)


@files_app.command("rm")
@handle_errors
def rm(path: str, recursive: bool = typer.Option(False, "-r", "--recursive")) -> None:
    client().delete("/api/v2/files", params={"path": path, "recursive": recursive})
    console.print(f"removed {path}", markup=False)


@files_app.command("mkdir")
@handle_errors
def mkdir(path: str, parents: bool = typer.Option(False, "-p", "--parents", help="also missing parents")) -> None:
    client().post("/api/v2/files/mkdir", json={"path": path, "parents": parents})
    console.print(f"created {path}", markup=False)


@files_app.command("mv")
@handle_errors
def mv(src: str, dst: str, overwrite: bool = typer.Option(False, "--overwrite")) -> None:
    out = client().post("/api/v2/files/move", json={"src": src, "dst": dst, "overwrite": overwrite})
    console.print(f"moved {src} → {out['path']}", markup=False)


@handle_errors
def passwd() -> None:
    """Set your SFTP password and print the exact `sftp` command to log in with.

    On a terminal it is asked twice, not echoed, and once you have a password the current one is asked
    first (it is also the SFTP password, so a token alone does not change it). From a pipe or a file
    nothing is asked: the first line is the new password, and an optional second line must repeat it
    (`echo pw | argus passwd`); the current one then comes from ``ARGUS_CURRENT_PASSWORD``.
    """
    piped = _read_piped_password()
    c = client()
    has_password = bool(c.get("/api/v2/me").get("has_password"))
    current = _current_password(piped is not None) if has_password else None
    pw = piped if piped is not None else typer.prompt("new password", hide_input=True, confirmation_prompt=True)
    body = {"password": pw} if current is None else {"password": pw, "current_password": current}
    c.post("/api/v2/me/password", json=body)
    sftp = c.get("/api/v2/me").get("sftp")
    if sftp:
        console.print(f"password set; log in with: {sftp}", markup=False)
    else:
        console.print("password set (this server does not run SFTP)")


def _current_password(piped: bool) -> str:
    if not piped:
        return typer.prompt("current password", hide_input=True)
    current = os.environ.get("ARGUS_CURRENT_PASSWORD")
    if not current:
        fail("you have a password already: set ARGUS_CURRENT_PASSWORD to it (or run `argus passwd` on a "
             "terminal, which asks for it); forgot it? an administrator can reset it")
    return current


def _read_piped_password() -> str | None:
    """The new password from standard input, or None on a terminal (then it is prompted, not echoed:
    getpass on a pipe would only warn and echo)."""
    if sys.stdin is not None and sys.stdin.isatty():
        return None
    if sys.stdin is None:
        fail("no terminal and no standard input to read the password from")
    text = sys.stdin.read()
    lines = [line.removesuffix("\r") for line in text.removesuffix("\n").split("\n")]
    if not text:
        fail("no password on standard input (one line, or two identical lines)")
    if len(lines) > 2 or (len(lines) == 2 and lines[1] != lines[0]):
        fail("standard input must hold one line (the password) or two identical lines")
    return lines[0]


@keys_app.command("add")
@handle_errors
def keys_add(pubfile: str = typer.Argument("-", help="a .pub file, or '-' for standard input")) -> None:
    text = sys.stdin.read() if pubfile == "-" else Path(pubfile).expanduser().read_text()
    k = client().post("/api/v2/me/keys", json={"public_key": text.strip()})
    console.print(f"added key {k['id']} {k['fingerprint']}", markup=False)


@keys_app.command("list")
@handle_errors
def keys_list(output: Output = output_option()) -> None:
    keys = client().get("/api/v2/me/keys")
    if emit(keys, output):
        return
    table(["ID", "FINGERPRINT", "COMMENT"], ((k["id"], k["fingerprint"], k.get("comment") or "") for k in keys),
          wrap=("COMMENT",))


@keys_app.command("rm")
@handle_errors
def keys_rm(key_id: int) -> None:
    client().delete(f"/api/v2/me/keys/{key_id}")
    console.print(f"removed key {key_id}")


def register(app: typer.Typer) -> None:
    app.add_typer(files_app, name="files")
    app.add_typer(keys_app, name="keys")
    app.command("passwd")(passwd)
