"""The embedded SFTP server (a ``Component`` of ``argus server`` / ``argus up``).

SFTP only: no shell, no exec, no port/agent/X11 forwarding, no SCP. Users log in
with their Argus name and either the password they set (``argus passwd``) or a
registered public key (``argus keys add``); with LDAP sign-in on (``ldap_url``), directory users log in
with their directory password (services/directory.py; the child process gets the LDAP settings with the
others on its stdin). Disabled users are refused; failed
logins are limited per (user, address) with a ceiling per address; valid keys are never
throttled (``services.logins``). Argon2
verification and database look-ups run in a worker thread so one slow login
does not stall every transfer on the event loop.

The host key is generated once into ``<state_dir>/ssh_host_ed25519_key`` and
reused, so clients never see a changed host key after a restart.

Ciphers (``settings.sftp_ciphers``): SSH uses the *client's* first choice among
those the server offers. OpenSSH clients list chacha20-poly1305, then AES-CTR,
then AES-GCM, so with asyncssh's default offer they get chacha20, which asyncssh
builds from three ``cryptography`` ChaCha20 contexts and a separate Poly1305 pass
per packet; AES-GCM is one fused AEAD call and made transfers 1.3-2.5x
faster in ``bench/sftp.py`` (AES-CTR was no faster than chacha20). The default
offer is kept for compatibility (PuTTY/FileZilla/WinSCP before 2021 lack GCM);
an installation whose clients are all recent may set
``ARGUS_SFTP_CIPHERS=aes128-gcm@openssh.com,aes256-gcm@openssh.com``, and any
user can ask for it from their side with ``sftp -c aes128-gcm@openssh.com``.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

import asyncssh

from argus.errors import ArgusError
from argus.services import audit
from argus.services.directory import Directory
from argus.services.files import FileStore, user_files
from argus.services.logins import LoginLimiter, login_with_key, login_with_password
from argus.services.principal import Principal
from argus.services.users import password_too_long
from argus.settings import Settings
from argus.sftp.handler import ArgusSFTPServer

if TYPE_CHECKING:
    from argus.db.session import Database

log = logging.getLogger(__name__)
HOST_KEY_NAME = "ssh_host_ed25519_key"


def load_host_key(state_dir: Path) -> asyncssh.SSHKey:
    """The server's host key, created on first use (mode 0600) and read back on every start."""
    path = state_dir / HOST_KEY_NAME
    if not path.exists():
        state_dir.mkdir(parents=True, exist_ok=True)
        key = asyncssh.generate_private_key("ssh-ed25519", comment="argus-sftp")
        tmp = path.with_suffix(".tmp")
        key.write_private_key(str(tmp))
        tmp.chmod(0o600)
        tmp.replace(path)
        key.write_public_key(str(path) + ".pub")
    return asyncssh.read_private_key(str(path))


class _Connection(asyncssh.SSHServer):
    """Per-connection authentication; remembers who logged in for the SFTP session."""

    def __init__(self, owner: SftpServer) -> None:
        self.owner = owner
        self.principal: Principal | None = None
        self.address = "?"

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        peer = conn.get_extra_info("peername")
        self.address = str(peer[0]) if peer else "?"

    def begin_auth(self, username: str) -> bool:
        return True

    def password_auth_supported(self) -> bool:
        return True

    def public_key_auth_supported(self) -> bool:
        return True

    async def validate_password(self, username: str, password: str) -> bool:
        limiter = self.owner.limiter
        if limiter.blocked(username, self.address):
            log.info("sftp: password login for %r from %s refused: locked out after failures", username, self.address)
            return False
        if password_too_long(password):  # refused before any thread, look-up or hashing
            limiter.failed(username, self.address)
            return False
        principal = await asyncio.to_thread(self.owner.check_password, username, password, self.address)
        if principal is None:
            limiter.failed(username, self.address)
            return False
        self.principal = principal
        return True

    async def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        # Not throttled (services.logins): a key cannot be guessed, and a key that does not match is
        # not counted as a failure since clients offer every key they hold.
        principal = await asyncio.to_thread(self.owner.check_key, username, key.get_fingerprint("sha256"))
        if principal is None:
            return False
        self.principal = principal
        return True


class SftpServer:
    """Component: listens on settings.sftp_host:sftp_port while the server runs."""

    name = "sftp"

    def __init__(self, settings: Settings, db: Database, store: FileStore) -> None:
        self.settings = settings
        self.db = db
        self.store = store
        self.limiter = LoginLimiter(settings.login_max_failures, settings.login_window_s,
                                    on_lockout=audit.lockout_recorder(db.session, "sftp"))
        self.directory = Directory.from_settings(settings)
        self._acceptor: asyncssh.SSHAcceptor | None = None

    @property
    def banner(self) -> str:
        return f"SFTP: sftp -P {self.settings.sftp_port} <user>@{self.settings.sftp_host}"

    def check_password(self, username: str, password: str, address: str | None = None) -> Principal | None:
        """SSH has no way to say why: a directory user disabled in Argus, a name Argus cannot take, or a
        directory that cannot be reached (logged by services/directory.py) are a refused password too."""
        try:
            with self.db.session() as session:
                return login_with_password(session, username, password, directory=self.directory, address=address)
        except ArgusError as exc:
            log.info("sftp: password login for %r refused: %s", username[:80], exc)
            return None

    def check_key(self, username: str, fingerprint: str) -> Principal | None:
        with self.db.session() as session:
            return login_with_key(session, username, fingerprint)

    def _sftp_session(self, chan: asyncssh.SSHServerChannel) -> ArgusSFTPServer:
        owner = chan.get_connection().get_owner()
        assert isinstance(owner, _Connection) and owner.principal is not None
        with self.db.session() as session:
            files = user_files(self.store, session, owner.principal)
        return ArgusSFTPServer(chan, files)

    async def start(self) -> None:
        s = self.settings
        key = load_host_key(s.state_dir)
        ciphers = [c.strip() for c in s.sftp_ciphers.split(",") if c.strip()]
        self._acceptor = await asyncssh.create_server(
            lambda: _Connection(self), s.sftp_host, s.sftp_port,
            server_host_keys=[key], sftp_factory=self._sftp_session, allow_scp=False,
            agent_forwarding=False, x11_forwarding=False, allow_pty=False,
            login_timeout=60, keepalive_interval=30, **({"encryption_algs": ciphers} if ciphers else {}),
        )
        log.info("SFTP server on %s:%s", s.sftp_host, s.sftp_port)

    async def stop(self) -> None:
        if self._acceptor is not None:
            self._acceptor.close()
            await self._acceptor.wait_closed()
            self._acceptor = None
