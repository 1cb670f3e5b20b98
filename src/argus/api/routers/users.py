"""/api/v2/me and the admin's /api/v2/users (users and their tokens)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response
from sqlalchemy.orm import Session

from argus.api.context import AppContext
from argus.api.deps import current_principal, get_ctx, get_session, require_admin
from argus.api.schemas import (
    ErrorOut,
    KeyIn,
    KeyOut,
    MeOut,
    PasswordIn,
    RowId,
    TokenCreatedOut,
    TokenIn,
    TokenOut,
    UserIn,
    UserOut,
)
from argus.services import users as svc
from argus.services.principal import Principal

router = APIRouter(prefix="/api/v2", tags=["users"])
_ERR = {400: {"model": ErrorOut}, 403: {"model": ErrorOut}, 404: {"model": ErrorOut}, 409: {"model": ErrorOut}}


@router.get("/me", response_model=MeOut)
def me(principal: Principal = Depends(current_principal), ctx: AppContext = Depends(get_ctx)) -> MeOut:
    s = ctx.settings
    sftp = f"sftp -P {s.sftp_port} {principal.name}@{s.sftp_public_host}" if s.sftp_enabled else None
    return MeOut(name=principal.name, is_admin=principal.is_admin, home=str(ctx.layout.home(principal.name)), sftp=sftp)


@router.post("/me/password", status_code=204, responses=_ERR)
def set_password(body: PasswordIn, principal: Principal = Depends(current_principal),
                 session: Session = Depends(get_session)) -> Response:
    svc.set_password(session, principal.id, body.password)
    return Response(status_code=204)


@router.get("/me/keys", response_model=list[KeyOut])
def list_keys(principal: Principal = Depends(current_principal), session: Session = Depends(get_session)) -> list[KeyOut]:
    return [KeyOut.model_validate(k) for k in svc.list_ssh_keys(session, principal.id)]


@router.post("/me/keys", status_code=201, response_model=KeyOut, responses=_ERR)
def add_key(body: KeyIn, principal: Principal = Depends(current_principal),
            session: Session = Depends(get_session)) -> KeyOut:
    return KeyOut.model_validate(svc.add_ssh_key(session, principal.id, body.public_key))


@router.delete("/me/keys/{key_id}", status_code=204, responses=_ERR)
def remove_key(key_id: RowId, principal: Principal = Depends(current_principal),
               session: Session = Depends(get_session)) -> Response:
    svc.remove_ssh_key(session, principal.id, key_id)
    return Response(status_code=204)


@router.get("/users", response_model=list[UserOut], responses=_ERR)
def list_users(_: Principal = Depends(require_admin), session: Session = Depends(get_session)) -> list[UserOut]:
    return [UserOut.model_validate(u) for u in svc.list_users(session)]


@router.post("/users", status_code=201, response_model=UserOut, responses=_ERR)
def create_user(body: UserIn, _: Principal = Depends(require_admin), session: Session = Depends(get_session),
                ctx: AppContext = Depends(get_ctx)) -> UserOut:
    return UserOut.model_validate(svc.create_user(session, ctx.settings.root, body.name, is_admin=body.is_admin))


@router.post("/users/{name}/disable", response_model=UserOut, responses=_ERR)
def disable_user(name: str, _: Principal = Depends(require_admin), session: Session = Depends(get_session)) -> UserOut:
    return UserOut.model_validate(svc.set_user_disabled(session, name, True))


@router.post("/users/{name}/enable", response_model=UserOut, responses=_ERR)
def enable_user(name: str, _: Principal = Depends(require_admin), session: Session = Depends(get_session)) -> UserOut:
    return UserOut.model_validate(svc.set_user_disabled(session, name, False))


@router.get("/users/{name}/tokens", response_model=list[TokenOut], responses=_ERR)
def list_tokens(name: str, _: Principal = Depends(require_admin), session: Session = Depends(get_session)) -> list[TokenOut]:
    return [TokenOut.model_validate(t) for t in svc.list_tokens(session, svc.get_user(session, name))]


@router.post("/users/{name}/tokens", status_code=201, response_model=TokenCreatedOut, responses=_ERR)
def create_token(name: str, body: TokenIn | None = None, _: Principal = Depends(require_admin),
                 session: Session = Depends(get_session)) -> TokenCreatedOut:
    user = svc.get_user(session, name)
    row, token = svc.create_token(session, user, name=body.name if body else None)
    return TokenCreatedOut(id=row.id, token=token, name=row.name)


@router.delete("/users/{name}/tokens/{token_id}", response_model=TokenOut, responses=_ERR)
def revoke_token(name: str, token_id: RowId, _: Principal = Depends(require_admin),
                 session: Session = Depends(get_session)) -> TokenOut:
    return TokenOut.model_validate(svc.revoke_token(session, svc.get_user(session, name), token_id))
