"""/api/v2/me and the admin's /api/v2/users (users and their tokens)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response
from sqlalchemy.orm import Session

from argus.api.context import AppContext
from argus.api.deps import (
    client_ip,
    current_principal,
    get_ctx,
    get_session,
    require_admin,
    web_login_limiter,
)
from argus.api.schemas import (
    ErrorOut,
    KeyIn,
    KeyOut,
    MeOut,
    MyPasswordIn,
    PasswordIn,
    RowId,
    TokenCreatedOut,
    TokenIn,
    TokenOut,
    UserIn,
    UserLimitsIn,
    UserOut,
)
from argus.services import audit
from argus.services import users as svc
from argus.services.files import shared_store
from argus.services.logins import LoginLimiter, change_password_throttled
from argus.services.principal import Principal

router = APIRouter(prefix="/api/v2", tags=["users"])
_ERR = {400: {"model": ErrorOut}, 403: {"model": ErrorOut}, 404: {"model": ErrorOut}, 409: {"model": ErrorOut}}


@router.get("/me", response_model=MeOut)
def me(principal: Principal = Depends(current_principal), ctx: AppContext = Depends(get_ctx)) -> MeOut:
    s = ctx.settings
    sftp = f"sftp -P {s.sftp_port} {principal.name}@{s.sftp_public_host}" if s.sftp_enabled else None
    with ctx.db.session() as session:
        has_password = svc.has_password(session, principal.id)
    return MeOut(name=principal.name, is_admin=principal.is_admin, home=str(ctx.layout.home(principal.name)), sftp=sftp,
                 has_password=has_password)


@router.post("/me/password", status_code=204, responses={**_ERR, 429: {"model": ErrorOut}})
def set_password(body: MyPasswordIn, request: Request, principal: Principal = Depends(current_principal),
                 session: Session = Depends(get_session, scope="function"),
                 limiter: LoginLimiter = Depends(web_login_limiter)) -> Response:
    """Set your sign-in and SFTP password; once one is set, ``current_password`` must be the current one
    (wrong ones count like failed sign-ins: 429 after too many)."""
    change_password_throttled(session, limiter, principal, body.password, body.current_password,
                              client_ip(request) or "unknown")
    audit.record(session, actor=principal.name, action=audit.USER_PASSWORD_SET, target=principal.name,
                 source_ip=client_ip(request))
    return Response(status_code=204)


@router.get("/me/keys", response_model=list[KeyOut])
def list_keys(principal: Principal = Depends(current_principal), session: Session = Depends(get_session, scope="function")) -> list[KeyOut]:
    return [KeyOut.model_validate(k) for k in svc.list_ssh_keys(session, principal.id)]


@router.post("/me/keys", status_code=201, response_model=KeyOut, responses=_ERR)
def add_key(body: KeyIn, request: Request, principal: Principal = Depends(current_principal),
            session: Session = Depends(get_session, scope="function")) -> KeyOut:
    key = svc.add_ssh_key(session, principal.id, body.public_key)
    audit.record(session, actor=principal.name, action=audit.SSH_KEY_ADDED, target=principal.name,
                 detail={"key_id": key.id, "fingerprint": key.fingerprint}, source_ip=client_ip(request))
    return KeyOut.model_validate(key)


@router.delete("/me/keys/{key_id}", status_code=204, responses=_ERR)
def remove_key(key_id: RowId, request: Request, principal: Principal = Depends(current_principal),
               session: Session = Depends(get_session, scope="function")) -> Response:
    fingerprint = svc.remove_ssh_key(session, principal.id, key_id)
    audit.record(session, actor=principal.name, action=audit.SSH_KEY_REMOVED, target=principal.name,
                 detail={"key_id": key_id, "fingerprint": fingerprint}, source_ip=client_ip(request))
    return Response(status_code=204)


@router.get("/me/tokens", response_model=list[TokenOut])
def list_my_tokens(principal: Principal = Depends(current_principal),
                   session: Session = Depends(get_session, scope="function")) -> list[TokenOut]:
    return [TokenOut.model_validate(t) for t in svc.list_tokens(session, svc.get_user(session, principal.name))]


@router.post("/me/tokens", status_code=201, response_model=TokenCreatedOut, responses=_ERR)
def create_my_token(request: Request, body: TokenIn | None = None, principal: Principal = Depends(current_principal),
                    session: Session = Depends(get_session, scope="function")) -> TokenCreatedOut:
    """A new API token for yourself; its secret is in this answer only (the server keeps a hash)."""
    user = svc.get_user(session, principal.name)
    row, token = svc.create_token(session, user, name=body.name if body else None)
    audit.record(session, actor=principal.name, action=audit.TOKEN_CREATED, target=user.name,
                 detail={"token_id": row.id, "prefix": row.prefix, "name": row.name}, source_ip=client_ip(request))
    return TokenCreatedOut(id=row.id, token=token, name=row.name)


@router.delete("/me/tokens/{token_id}", response_model=TokenOut, responses=_ERR)
def revoke_my_token(token_id: RowId, request: Request, principal: Principal = Depends(current_principal),
                    session: Session = Depends(get_session, scope="function")) -> TokenOut:
    tok = svc.revoke_token(session, svc.get_user(session, principal.name), token_id)
    audit.record(session, actor=principal.name, action=audit.TOKEN_REVOKED, target=principal.name,
                 detail={"token_id": tok.id, "prefix": tok.prefix}, source_ip=client_ip(request))
    return TokenOut.model_validate(tok)


@router.get("/users/storage", responses=_ERR)
def users_storage(_: Principal = Depends(require_admin), session: Session = Depends(get_session, scope="function"),
                  ctx: AppContext = Depends(get_ctx)) -> list[dict]:
    """Bytes each user stores in their home and their quota (null: none); measured, then cached a minute."""
    store = shared_store(ctx.extras, ctx.settings)
    return [{"name": u.name, "used_bytes": store.ledger.usage(u.name),
             "quota_bytes": u.quota_bytes if u.quota_bytes is not None else store.default_quota}
            for u in svc.list_users(session)]


@router.post("/users/{name}/password", status_code=204, responses=_ERR)
def reset_password(name: str, body: PasswordIn, request: Request, admin: Principal = Depends(require_admin),
                   session: Session = Depends(get_session, scope="function")) -> Response:
    """Set another user's SFTP/sign-in password (they can change it on their Account page)."""
    user = svc.get_user(session, name)
    svc.set_password(session, user.id, body.password)
    audit.record(session, actor=admin.name, action=audit.USER_PASSWORD_SET, target=user.name,
                 source_ip=client_ip(request))
    return Response(status_code=204)


@router.get("/users", response_model=list[UserOut], responses=_ERR)
def list_users(_: Principal = Depends(require_admin), session: Session = Depends(get_session, scope="function")) -> list[UserOut]:
    return [UserOut.model_validate(u) for u in svc.list_users(session)]


@router.post("/users", status_code=201, response_model=UserOut, responses=_ERR)
def create_user(body: UserIn, request: Request, admin: Principal = Depends(require_admin),
                session: Session = Depends(get_session, scope="function"), ctx: AppContext = Depends(get_ctx)) -> UserOut:
    user = svc.create_user(session, ctx.settings.root, body.name, is_admin=body.is_admin)
    audit.record(session, actor=admin.name, action=audit.USER_CREATED, target=user.name,
                 detail={"is_admin": user.is_admin}, source_ip=client_ip(request))
    return UserOut.model_validate(user)


@router.post("/users/{name}/disable", response_model=UserOut, responses=_ERR)
def disable_user(name: str, request: Request, admin: Principal = Depends(require_admin),
                 session: Session = Depends(get_session, scope="function")) -> UserOut:
    user = svc.set_user_disabled(session, name, True, actor=admin.name)
    audit.record(session, actor=admin.name, action=audit.USER_DISABLED, target=user.name, source_ip=client_ip(request))
    return UserOut.model_validate(user)


@router.post("/users/{name}/enable", response_model=UserOut, responses=_ERR)
def enable_user(name: str, request: Request, admin: Principal = Depends(require_admin),
                session: Session = Depends(get_session, scope="function")) -> UserOut:
    user = svc.set_user_disabled(session, name, False)
    audit.record(session, actor=admin.name, action=audit.USER_ENABLED, target=user.name, source_ip=client_ip(request))
    return UserOut.model_validate(user)


@router.patch("/users/{name}", response_model=UserOut, responses=_ERR)
def set_user_limits(name: str, body: UserLimitsIn, request: Request, admin: Principal = Depends(require_admin),
                    session: Session = Depends(get_session, scope="function")) -> UserOut:
    """Set a user's own limits (GPUs held at once, running tasks); a field sent as null brings back the
    platform default, a field not sent stays as it is. The scheduler applies them on its next pass."""
    sent = {k: getattr(body, k) for k in body.model_fields_set}
    user, changed = svc.set_user_limits(session, name, **sent)
    if changed:
        audit.record(session, actor=admin.name, action=audit.USER_LIMITS_CHANGED, target=user.name,
                     detail=changed, source_ip=client_ip(request))
    return UserOut.model_validate(user)


@router.get("/users/{name}/tokens", response_model=list[TokenOut], responses=_ERR)
def list_tokens(name: str, _: Principal = Depends(require_admin), session: Session = Depends(get_session, scope="function")) -> list[TokenOut]:
    return [TokenOut.model_validate(t) for t in svc.list_tokens(session, svc.get_user(session, name))]


@router.post("/users/{name}/tokens", status_code=201, response_model=TokenCreatedOut, responses=_ERR)
def create_token(name: str, request: Request, body: TokenIn | None = None, admin: Principal = Depends(require_admin),
                 session: Session = Depends(get_session, scope="function")) -> TokenCreatedOut:
    user = svc.get_user(session, name)
    row, token = svc.create_token(session, user, name=body.name if body else None)
    audit.record(session, actor=admin.name, action=audit.TOKEN_CREATED, target=user.name,
                 detail={"token_id": row.id, "prefix": row.prefix, "name": row.name}, source_ip=client_ip(request))
    return TokenCreatedOut(id=row.id, token=token, name=row.name)


@router.delete("/users/{name}/tokens/{token_id}", response_model=TokenOut, responses=_ERR)
def revoke_token(name: str, token_id: RowId, request: Request, admin: Principal = Depends(require_admin),
                 session: Session = Depends(get_session, scope="function")) -> TokenOut:
    tok = svc.revoke_token(session, svc.get_user(session, name), token_id)
    audit.record(session, actor=admin.name, action=audit.TOKEN_REVOKED, target=name,
                 detail={"token_id": tok.id, "prefix": tok.prefix}, source_ip=client_ip(request))
    return TokenOut.model_validate(tok)
