"""SFTP logins: password and public-key checks, and a per-user / per-address failure limiter.

The limiter is in memory (one server process owns the SFTP port): after
``max_failures`` failed attempts within ``window_s`` by one user name *or* from
one address, every further attempt for that key is refused, even a correct one,
until old failures leave the window. Counting by address stops one client
spraying many names; counting by name stops many clients guessing one password.
Unknown users cost a failure too, so names cannot be enumerated faster.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque

from sqlalchemy import select
from sqlalchemy.orm import Session

from argus.db.models import SshKeyModel, UserModel
from argus.services.principal import Principal
from argus.services.users import verify_password


class LoginLimiter:
    def __init__(self, max_failures: int, window_s: float) -> None:
        self.max_failures = max_failures
        self.window_s = window_s
        self._lock = threading.Lock()
        self._failures: dict[str, deque[float]] = defaultdict(deque)

    def _recent(self, key: str, now: float) -> int:
        q = self._failures.get(key)
        if not q:
            return 0
        while q and now - q[0] > self.window_s:
            q.popleft()
        if not q:
            del self._failures[key]
            return 0
        return len(q)

    def blocked(self, user: str, address: str) -> bool:
        now = time.monotonic()
        with self._lock:
            return any(self._recent(k, now) >= self.max_failures for k in (f"u:{user}", f"a:{address}"))

    def failed(self, user: str, address: str) -> None:
        now = time.monotonic()
        with self._lock:
            for key in (f"u:{user}", f"a:{address}"):
                self._failures[key].append(now)


def _active_user(session: Session, name: str) -> UserModel | None:
    user = session.scalar(select(UserModel).where(UserModel.name == name))
    return None if user is None or user.disabled else user


def login_with_password(session: Session, name: str, password: str) -> Principal | None:
    """The principal when the password is right and the user enabled; argon2 is slow: call off the loop."""
    user = _active_user(session, name)
    if user is None or not verify_password(user, password):
        return None
    return Principal(id=user.id, name=user.name, is_admin=user.is_admin)


def login_with_key(session: Session, name: str, fingerprint: str) -> Principal | None:
    """The principal when a key with this SHA-256 fingerprint is registered to an enabled user."""
    user = _active_user(session, name)
    if user is None:
        return None
    found = session.scalar(select(SshKeyModel.id).where(SshKeyModel.user_id == user.id,
                                                        SshKeyModel.fingerprint == fingerprint))
    return None if found is None else Principal(id=user.id, name=user.name, is_admin=user.is_admin)
