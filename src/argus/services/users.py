"""Users, API tokens, passwords and SSH keys.

Tokens are 32 random bytes shown once and stored as SHA-256 (a token is not a
password: it has full entropy, so a fast hash is safe and lets every request
authenticate in microseconds). Passwords use Argon2id. Creating a user also
creates their home skeleton on the shared filesystem.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime
from pathlib import Path

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import bindparam, select, update
from sqlalchemy.orm import Session

from argus.core.messages import field_error, refusal
from argus.core.paths import HOME_DIRS, USER_NAME_RE
from argus.db.models import ApiTokenModel, SshKeyModel, UserModel, WebSessionModel
from argus.errors import ClientError, Conflict, NotFound, Unauthorized
from argus.services import audit
from argus.services.principal import Principal

TOKEN_PREFIX = "argus_"
_hasher = PasswordHasher()
MIN_PASSWORD_LEN = 8
# Longer passwords are refused before any hashing: Argon2 digests the whole input, so a megabyte
# "password" at every SFTP attempt is CPU spent on an attacker; no passphrase needs more.
MAX_PASSWORD_BYTES = 1024


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def ensure_layout(root: Path) -> None:
    """Create the shared folders every installation has."""
    for sub in ("users", "datasets", "hf"):
        (root / sub).mkdir(parents=True, exist_ok=True)


def ensure_home(root: Path, name: str) -> Path:
    home = root / "users" / name
    for sub in HOME_DIRS:
        (home / sub).mkdir(parents=True, exist_ok=True)
    return home


def validate_user_name(name: object) -> str:
    if not isinstance(name, str) or not USER_NAME_RE.fullmatch(name):  # `$` alone lets "ab\n" through
        raise refusal(ClientError, "invalid_user", "user.name_invalid", errors=[field_error("name", name, "name.rule")])
    return name


def get_user(session: Session, name: str) -> UserModel:
    user = session.scalar(select(UserModel).where(UserModel.name == name))
    if user is None:
        raise refusal(NotFound, "user_not_found", "user.not_found", user=repr(name))
    return user


def create_user(session: Session, root: Path, name: str, *, is_admin: bool = False) -> UserModel:
    validate_user_name(name)
    if session.scalar(select(UserModel.id).where(UserModel.name == name)) is not None:
        raise refusal(Conflict, "user_exists", "user.exists", user=repr(name))
    user = UserModel(name=name, is_admin=is_admin)
    session.add(user)
    session.flush()
    ensure_home(root, name)
    return user


def list_users(session: Session) -> list[UserModel]:
    return list(session.scalars(select(UserModel).order_by(UserModel.name)))


def set_user_disabled(session: Session, name: str, disabled: bool, *, actor: str | None = None) -> UserModel:
    """Disabling also ends the user's browser sessions (every request checks ``disabled`` too), so
    enabling them again does not bring old cookies back to life.

    An admin (``actor``) cannot disable their own account: it would end their session at once and could
    leave the installation with no enabled admin, recoverable only from the state directory."""
    if disabled and actor is not None and actor == name:
        raise refusal(Conflict, "self_disable", "user.self_disable",
                      errors=[field_error("name", name, "user.self_disable_field")])
    user = get_user(session, name)
    user.disabled = disabled
    if disabled:
        session.execute(update(WebSessionModel).where(WebSessionModel.user_id == user.id,
                                                      WebSessionModel.revoked_at.is_(None))
                        .values(revoked_at=datetime.now(UTC)))
    return user


UNSET: object = object()  # "field not sent": leave that limit as it is (None clears it)
LIMIT_FIELDS = ("max_gpus", "max_running_tasks", "quota_bytes")
_LIMIT_MAX = {"max_gpus": 1_000_000, "max_running_tasks": 1_000_000, "quota_bytes": 1 << 60}


def set_user_limits(session: Session, name: str, **limits: object) -> tuple[UserModel, dict[str, object]]:
    """Set or clear (None) a user's own limits; returns the user and ``{field: [old, new]}`` of what changed.

    A limit is a whole number of at least 1; None brings back the platform default
    (``max_gpus_per_user`` / ``max_running_tasks_per_user`` / ``quota_bytes``, the storage quota of the
    user's home). The scheduler reads them each pass; the file store at the next write.
    """
    errors = []
    for key, value in limits.items():
        if key not in LIMIT_FIELDS:
            errors.append(field_error(key, value, "user.limit_unknown", limits=", ".join(LIMIT_FIELDS)))
        elif value is not UNSET and value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _LIMIT_MAX[key]):
            errors.append(field_error(key, value, "user.limit_range", max=_LIMIT_MAX[key]))
    if errors:
        raise refusal(ClientError, "invalid_limits", "user.limits_invalid", errors=errors)
    user = get_user(session, name)
    changed: dict[str, object] = {}
    for key, value in limits.items():
        if value is not UNSET and getattr(user, key) != value:
            changed[key] = [getattr(user, key), value]
            setattr(user, key, value)
    return user, changed


def create_token(
    session: Session, user: UserModel, name: str | None = None, token: str | None = None
) -> tuple[ApiTokenModel, str]:
    """Create a token; its plaintext is returned now and never again."""
    plaintext = token or new_token()
    row = ApiTokenModel(user_id=user.id, token_hash=hash_token(plaintext), prefix=plaintext[:12], name=name)
    session.add(row)
    session.flush()
    return row, plaintext


def list_tokens(session: Session, user: UserModel) -> list[ApiTokenModel]:
    return list(session.scalars(select(ApiTokenModel).where(ApiTokenModel.user_id == user.id).order_by(ApiTokenModel.id)))


def revoke_token(session: Session, user: UserModel, token_id: int) -> ApiTokenModel:
    tok = session.get(ApiTokenModel, token_id)
    if tok is None or tok.user_id != user.id:
        raise refusal(NotFound, "token_not_found", "token.not_found", user=repr(user.name), token=token_id)
    if tok.revoked_at is None:
        tok.revoked_at = datetime.now(UTC)
    return tok


def authenticate_token(session: Session, token: str) -> Principal:
    row = session.connection().execute(_TOKEN_OWNER, {"token_hash": hash_token(token)}).first()
    if row is None or row.revoked_at is not None:
        raise Unauthorized("invalid or revoked token", code="unauthorized")
    if row.disabled:
        raise Unauthorized(f"user {row.name!r} is disabled", code="user_disabled")
    return Principal(id=row.id, name=row.name, is_admin=row.is_admin)


# Every API request runs this: built once, plain columns (no ORM objects to make for two rows' worth of
# fields), so SQLAlchemy reuses the compiled statement — a tenth of a submit's CPU went to the ORM form.
_TOKEN_OWNER = (
    select(ApiTokenModel.revoked_at, UserModel.id, UserModel.name, UserModel.is_admin, UserModel.disabled)
    .join(UserModel, UserModel.id == ApiTokenModel.user_id)
    .where(ApiTokenModel.token_hash == bindparam("token_hash"))
)


def ensure_admin(session: Session, root: Path, admin_name: str, fixed_token: str | None) -> str | None:
    """Create the admin and a first token on first start; return that token once.

    With ``ARGUS_ADMIN_TOKEN`` set, that exact token is made valid (and returned only
    when newly registered), so automation can start a fresh server with a known token.
    """
    ensure_layout(root)
    admin = session.scalar(select(UserModel).where(UserModel.name == admin_name))
    created = None
    if admin is None:
        admin = create_user(session, root, admin_name, is_admin=True)
        if fixed_token is None:
            created = create_token(session, admin, name="initial")[1]
    else:
        ensure_home(root, admin_name)
    if fixed_token is not None:
        existing = session.scalar(select(ApiTokenModel).where(ApiTokenModel.token_hash == hash_token(fixed_token)))
        if existing is None:
            created = create_token(session, admin, name="ARGUS_ADMIN_TOKEN", token=fixed_token)[1]
        elif existing.user_id != admin.id:
            raise Conflict("ARGUS_ADMIN_TOKEN belongs to a non-admin user", code="admin_token_conflict")
    return created



def reset_admin_token(session: Session, root: Path, admin_name: str) -> str:
    """Revoke every token of the admin and return a new one (``argus admin token --reset``).

    For the admin who lost the token printed once: whoever can write the state directory's
    database is trusted already, so this runs locally against it, no API call. The admin is
    created when missing and enabled when disabled, so the new token always works.
    """
    ensure_layout(root)
    admin = session.scalar(select(UserModel).where(UserModel.name == admin_name))
    if admin is None:
        admin = create_user(session, root, admin_name, is_admin=True)
    admin.is_admin = True
    admin.disabled = False
    now = datetime.now(UTC)
    for tok in session.scalars(select(ApiTokenModel).where(ApiTokenModel.user_id == admin.id,
                                                           ApiTokenModel.revoked_at.is_(None))):
        tok.revoked_at = now
    audit.record(session, actor="(local state dir)", action=audit.ADMIN_TOKEN_RESET, target=admin_name)
    return create_token(session, admin, name="reset")[1]


# ---------------------------------------------------------------- passwords and keys (SFTP logins)


def change_own_password(session: Session, user_id: int, password: object, current: object) -> None:
    """A user changing their own password must give the current one when they have one: the password is
    also the SFTP password, so a borrowed browser session or a leaked API token must not be enough to
    take over file access. A first password (none set yet) needs no current one; an admin resetting
    someone else's uses ``set_password``."""
    user = session.get(UserModel, user_id)
    assert user is not None
    _refuse_directory_user(user)
    if user.password_hash:
        if current is None or current == "":
            raise refusal(ClientError, "current_password_required", "password.current_required",
                          errors=[field_error("current_password", None, "password.current_required_field")])
        if not isinstance(current, str) or not password_matches(user, current):
            raise refusal(ClientError, "wrong_current_password", "password.wrong_current",
                          errors=[field_error("current_password", None, "password.wrong_current_field")])
    set_password(session, user_id, password)


def has_password(session: Session, user_id: int) -> bool:
    return session.scalar(select(UserModel.password_hash).where(UserModel.id == user_id)) is not None


def _refuse_directory_user(user: UserModel) -> None:
    """A directory (LDAP) user's password is the directory's: a local one would never be checked
    (services/logins.py asks the directory about them), so setting one is refused, saying where to go."""
    if user.directory:
        raise refusal(Conflict, "directory_user", "password.directory_user", user=repr(user.name),
                      errors=[field_error("password", None, "password.directory_user_field")])


def set_password(session: Session, user_id: int, password: object) -> None:
    user = session.get(UserModel, user_id)
    assert user is not None
    _refuse_directory_user(user)
    if not isinstance(password, str) or len(password) < MIN_PASSWORD_LEN:
        raise refusal(ClientError, "invalid_password", "password.too_short",
                      errors=[field_error("password", None, "password.too_short_field", min=MIN_PASSWORD_LEN)])
    if password_too_long(password):
        raise refusal(ClientError, "invalid_password", "password.too_long",
                      errors=[field_error("password", None, "password.too_long_field", max=MAX_PASSWORD_BYTES)])
    user.password_hash = _hasher.hash(password)


def password_too_long(password: str) -> bool:
    """More than MAX_PASSWORD_BYTES once encoded (cheap: no encoding of huge strings past the bound)."""
    return len(password) > MAX_PASSWORD_BYTES or len(password.encode("utf-8", "surrogatepass")) > MAX_PASSWORD_BYTES


def verify_password(user: UserModel, password: str) -> bool:
    """The password is right *and* the user is enabled: what lets someone in."""
    return not user.disabled and password_matches(user, password)


def password_matches(user: UserModel, password: str) -> bool:
    """The password is right, whatever the account's state (sign-in tells a disabled account so only
    after this, so a wrong password learns nothing about the account)."""
    if not user.password_hash or password_too_long(password):
        return False
    try:
        return _hasher.verify(user.password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def add_ssh_key(session: Session, user_id: int, public_key: object) -> SshKeyModel:
    import asyncssh  # local: only key handling needs it

    if not isinstance(public_key, str) or not public_key.strip():
        raise refusal(ClientError, "invalid_key", "key.missing",
                      errors=[field_error("public_key", public_key, "key.missing_field")])
    try:
        key = asyncssh.import_public_key(public_key.strip())
    except (asyncssh.KeyImportError, ValueError) as exc:
        raise refusal(ClientError, "invalid_key", "key.invalid",
                      errors=[field_error("public_key", public_key[:80], "key.invalid_field", error=str(exc))]) from None
    fingerprint = key.get_fingerprint("sha256")
    for existing in session.scalars(select(SshKeyModel).where(SshKeyModel.user_id == user_id)):
        if existing.fingerprint == fingerprint:
            raise refusal(Conflict, "key_exists", "key.exists")
    parts = public_key.strip().split(None, 2)
    row = SshKeyModel(
        user_id=user_id,
        public_key=key.export_public_key("openssh").decode().strip(),
        fingerprint=fingerprint,
        comment=parts[2] if len(parts) > 2 else None,
    )
    session.add(row)
    session.flush()
    return row


def list_ssh_keys(session: Session, user_id: int) -> list[SshKeyModel]:
    return list(session.scalars(select(SshKeyModel).where(SshKeyModel.user_id == user_id).order_by(SshKeyModel.id)))


def remove_ssh_key(session: Session, user_id: int, key_id: int) -> str:
    """Delete the key; returns its fingerprint (for the audit log)."""
    row = session.get(SshKeyModel, key_id)
    if row is None or row.user_id != user_id:
        raise refusal(NotFound, "key_not_found", "key.not_found", key=key_id)
    session.delete(row)
    return row.fingerprint


