"""A private OpenLDAP server (slapd) for the directory sign-in tests (issue 26).

Each use starts its own ``slapd`` on a free loopback port, from a ``slapd.conf`` in a temporary folder
(``-f``, never the Debian package's /etc/ldap/slapd.d nor its system service), with an mdb database in
that folder, loaded offline by ``slapadd`` before the server starts; it is stopped at the end. Only
the schema files the package ships (``/etc/ldap/schema``) are read. Tests run as root here and in CI,
so slapd runs as the current user without ``-u``.

The directory: ``dc=example,dc=org`` with people under ``ou=people`` and groups (groupOfNames) under
``ou=groups``. ``employeeType: disabled`` marks a locked account: the tests' user filter excludes it,
as a site's filter would exclude a locked attribute. Passwords are ``{SSHA}`` hashes computed here.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import free_port
from tests.waiting import wait_until

SLAPD = Path("/usr/sbin/slapd")
SLAPADD = Path("/usr/sbin/slapadd")
SCHEMA_DIR = Path("/etc/ldap/schema")
MODULE_DIR = Path("/usr/lib/ldap")
SUFFIX = "dc=example,dc=org"
ROOT_DN = f"cn=admin,{SUFFIX}"
ROOT_PW = "slapd-root-secret"
SEARCH_DN = f"cn=argus,ou=services,{SUFFIX}"
SEARCH_PW = "argus-search-secret"
PEOPLE = f"ou=people,{SUFFIX}"
GROUPS = f"ou=groups,{SUFFIX}"
USER_FILTER = "(&(objectClass=inetOrgPerson)(uid={user})(!(employeeType=disabled)))"
# name -> (password, disabled in the directory)
USERS = {
    "dana": ("dana-ldap-pass-1", False),
    "erik": ("erik-ldap-pass-1", False),
    "carol": ("carol-ldap-pass-1", True),  # locked: the user filter excludes her
    "alice": ("alice-ldap-pass-1", False),  # the same name as a *local* user in some tests: never taken over
    "John.Doe": ("john-ldap-pass-1", False),  # a directory name that cannot be an Argus user name
}
# group cn -> members
GROUP_MEMBERS = {"nlp": ["dana", "carol"], "vision": ["dana", "erik"], "ops": ["erik"], "staff": ["dana", "erik"]}


def ssha(password: str) -> str:
    salt = os.urandom(8)
    return "{SSHA}" + base64.b64encode(hashlib.sha1(password.encode() + salt).digest() + salt).decode()  # noqa: S324


def user_dn(name: str) -> str:
    return f"uid={name},{PEOPLE}"


def group_dn(cn: str) -> str:
    return f"cn={cn},{GROUPS}"


def _ldif() -> str:
    parts = [f"dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example\n",
             f"dn: ou=people,{SUFFIX}\nobjectClass: organizationalUnit\nou: people\n",
             f"dn: ou=groups,{SUFFIX}\nobjectClass: organizationalUnit\nou: groups\n",
             f"dn: ou=services,{SUFFIX}\nobjectClass: organizationalUnit\nou: services\n",
             f"dn: {SEARCH_DN}\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\ncn: argus\n"
             f"userPassword: {ssha(SEARCH_PW)}\n"]
    for uid_number, (name, (password, disabled)) in enumerate(USERS.items(), start=10001):
        entry = (f"dn: {user_dn(name)}\nobjectClass: inetOrgPerson\nobjectClass: posixAccount\nuid: {name}\n"
                 f"cn: {name}\nsn: {name}\nuidNumber: {uid_number}\ngidNumber: {uid_number}\n"
                 f"homeDirectory: /home/{name}\nuserPassword: {ssha(password)}\n")
        if disabled:
            entry += "employeeType: disabled\n"
        parts.append(entry)
    for cn, members in GROUP_MEMBERS.items():
        parts.append(f"dn: {group_dn(cn)}\nobjectClass: groupOfNames\ncn: {cn}\n"
                     + "".join(f"member: {user_dn(m)}\n" for m in members))
    return "\n".join(parts)


def _conf(folder: Path) -> str:
    schemas = "".join(f"include {SCHEMA_DIR / name}.schema\n" for name in ("core", "cosine", "nis", "inetorgperson"))
    return f"""{schemas}
modulepath {MODULE_DIR}
moduleload back_mdb
pidfile {folder / 'slapd.pid'}
argsfile {folder / 'slapd.args'}

database mdb
maxsize 16777216
suffix "{SUFFIX}"
rootdn "{ROOT_DN}"
rootpw {ssha(ROOT_PW)}
directory {folder / 'data'}
index objectClass eq
index uid eq
index member eq

access to attrs=userPassword
    by self write
    by anonymous auth
    by * none
access to *
    by dn.exact="{SEARCH_DN}" read
    by self read
    by * none
"""


@dataclass
class Slapd:
    url: str
    port: int
    folder: Path
    proc: subprocess.Popen

    def admin(self):  # noqa: ANN201
        """An ldap3 connection bound as the directory's root (to change entries in a test)."""
        import ldap3

        conn = ldap3.Connection(ldap3.Server(self.url, get_info=ldap3.NONE), ROOT_DN, ROOT_PW, auto_bind=True)
        return conn

    def remove_from_group(self, cn: str, name: str) -> None:
        import ldap3

        with self.admin() as conn:
            assert conn.modify(group_dn(cn), {"member": [(ldap3.MODIFY_DELETE, [user_dn(name)])]}), conn.result

    def add_to_group(self, cn: str, name: str) -> None:
        import ldap3

        with self.admin() as conn:
            assert conn.modify(group_dn(cn), {"member": [(ldap3.MODIFY_ADD, [user_dn(name)])]}), conn.result

    def lock(self, name: str) -> None:
        import ldap3

        with self.admin() as conn:
            assert conn.modify(user_dn(name), {"employeeType": [(ldap3.MODIFY_REPLACE, ["disabled"])]}), conn.result

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def settings(self, **extra: object) -> dict[str, object]:
        """The Argus settings for this directory (service bind, groups, team mapping nlp/vision, admins: ops)."""
        values: dict[str, object] = dict(
            ldap_url=self.url, ldap_user_base=PEOPLE, ldap_user_filter=USER_FILTER, ldap_bind_dn=SEARCH_DN,
            ldap_bind_password=SEARCH_PW, ldap_group_base=GROUPS,
            ldap_team_groups=f"{group_dn('nlp')}=nlp;vision=vision", ldap_admin_group=group_dn("ops"),
            ldap_timeout_s=5.0)
        values.update(extra)
        return values


def _wait_listening(port: int, proc: subprocess.Popen, log: Path, timeout: float = 20) -> None:
    def listening() -> bool:
        if proc.poll() is not None:  # it will not come up: say why now, not after the time-out
            raise RuntimeError(f"slapd exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True

    wait_until(listening, timeout, every=0.05, ignore=(OSError,),
               what=lambda: f"slapd did not listen on {port}:\n{log.read_text(errors='replace')[-3000:]}")


@contextmanager
def slapd_server() -> Iterator[Slapd]:
    """A fresh private slapd with the users and groups above; stopped (and its folder removed) at the end."""
    if not SLAPD.exists():
        pytest.fail("slapd is required: apt-get install -y slapd ldap-utils (scripts/test.sh installs it)")
    folder = Path(tempfile.mkdtemp(prefix="argus-slapd-"))
    proc = None
    try:
        (folder / "data").mkdir()
        conf = folder / "slapd.conf"
        conf.write_text(_conf(folder))
        ldif = folder / "data.ldif"
        ldif.write_text(_ldif())
        r = subprocess.run([str(SLAPADD), "-q", "-f", str(conf), "-l", str(ldif)], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, f"slapadd failed:\n{r.stdout}{r.stderr}"
        port = free_port()
        url = f"ldap://127.0.0.1:{port}"
        log = folder / "slapd.log"
        # -d 0: stay in the foreground (a child we own and stop), no debug output
        proc = subprocess.Popen([str(SLAPD), "-f", str(conf), "-h", f"{url}/", "-d", "0"],
                                stdout=open(log, "wb"), stderr=subprocess.STDOUT)  # noqa: SIM115
        _wait_listening(port, proc, log)
        server = Slapd(url=url, port=port, folder=folder, proc=proc)
        yield server
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def slapd() -> Iterator[Slapd]:
    with slapd_server() as server:
        yield server


@pytest.fixture
def fresh_slapd() -> Iterator[Slapd]:
    """A slapd of the test's own, for tests that change the directory or stop it."""
    with slapd_server() as server:
        yield server
