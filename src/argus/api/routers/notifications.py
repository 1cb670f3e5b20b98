"""/api/v2/notifications: your webhooks and e-mail addresses for task events (issue 24).

Thin: every rule is in ``services/notifications.py``. Deliveries happen in the server's sender thread;
"send a test" only queues one and wakes that thread once the row is committed. Channel creation passes the
operator's ``notify_webhook_allow`` (internal receivers allowed); "send a test" passes this app's
per-user limiter, and answers its refusal itself: 429 with ``Retry-After``, which the shared error mapping
does not set.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, BackgroundTasks, Depends, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from argus.api.context import AppContext
from argus.api.deps import client_ip, current_principal, get_ctx, get_session
from argus.api.schemas import ErrorOut, RowId
from argus.services import notifications as svc
from argus.services.principal import Principal

router = APIRouter(prefix="/api/v2/notifications", tags=["notifications"])
_ERR = {400: {"model": ErrorOut}, 404: {"model": ErrorOut}}
_TEST_LIMITER = "notify_test_limiter"  # ctx.extras: this app's SendTestLimiter (one per app, so per server)


class ChannelIn(BaseModel):
    """Checked by the service, every problem in one answer (field, value, how to fix)."""

    model_config = ConfigDict(extra="forbid")

    kind: str | None = Field(None, description="webhook | email")
    target: str | None = Field(None, description="the webhook's http(s) URL, or the e-mail address")
    events: list[str] | None = Field(None, description="events to send; left out: all of them "
                                     "(SUCCEEDED, FAILED, CANCELED, STALLED, RESUMED, IDLE_GPU, MODEL_ALIAS)")


class ChannelOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    kind: str
    target: str
    events: list[str]
    enabled: bool
    created_at: datetime


class ChannelCreatedOut(ChannelOut):
    secret: str | None = Field(None, description="a webhook's signing secret, shown in this answer only: "
                               "X-Argus-Signature is sha256=HMAC-SHA256(secret, raw body) in hex")


class DeliveryOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    event: str
    task_id: str | None
    state: str = Field(description="delivered | pending (due, or waiting out a back-off) | failed (gave up)")
    attempts: int
    created_at: datetime
    delivered_at: datetime | None
    next_attempt_at: datetime | None
    last_error: str | None


class TestQueuedOut(BaseModel):
    delivery_id: int
    channel_id: int
    event: str


class OptionsOut(BaseModel):
    kinds: list[str]
    events: list[str]
    email_enabled: bool = Field(description="false: the operator has not configured SMTP (smtp_host)")


def _wake(ctx: AppContext) -> None:
    wake = ctx.extras.get("notify_wake")
    if wake is not None:
        wake()


@router.get("/options", response_model=OptionsOut)
async def options(ctx: AppContext = Depends(get_ctx), _: Principal = Depends(current_principal)) -> OptionsOut:
    """What a channel can be: its kinds, the events it can subscribe to, whether e-mail is on here."""
    return OptionsOut(kinds=list(svc.KINDS), events=list(svc.EVENTS), email_enabled=ctx.settings.smtp_host is not None)


@router.get("", response_model=list[ChannelOut])
def list_channels(principal: Principal = Depends(current_principal),
                  session: Session = Depends(get_session, scope="function")) -> list[ChannelOut]:
    """Your channels (a webhook's secret is never shown again)."""
    return [ChannelOut.model_validate(c) for c in svc.list_channels(session, principal)]


@router.post("", status_code=201, response_model=ChannelCreatedOut, responses=_ERR)
def create_channel(body: ChannelIn, request: Request, principal: Principal = Depends(current_principal),
                   session: Session = Depends(get_session, scope="function"),
                   ctx: AppContext = Depends(get_ctx)) -> ChannelCreatedOut:
    """A webhook (`{"kind": "webhook", "target": "https://…"}`) or an e-mail address; the answer holds a
    webhook's signing secret, the only time it is shown."""
    made = svc.create_channel(session, principal, body.kind, body.target, body.events,
                              email_enabled=ctx.settings.smtp_host is not None, source_ip=client_ip(request),
                              webhook_allow=ctx.settings.notify_webhook_allow)
    out: dict[str, Any] = ChannelOut.model_validate(made.channel).model_dump()
    return ChannelCreatedOut(**out, secret=made.secret)


@router.delete("/{channel_id}", status_code=204, responses=_ERR)
def delete_channel(channel_id: RowId, request: Request, principal: Principal = Depends(current_principal),
                   session: Session = Depends(get_session, scope="function")) -> Response:
    """Remove the channel; its notifications not delivered yet are dropped."""
    svc.delete_channel(session, principal, channel_id, source_ip=client_ip(request))
    return Response(status_code=204)


@router.post("/{channel_id}/test", status_code=202, response_model=TestQueuedOut,
             responses={**_ERR, 429: {"model": ErrorOut}})
def send_test(channel_id: RowId, background: BackgroundTasks, principal: Principal = Depends(current_principal),
              session: Session = Depends(get_session, scope="function"),
              ctx: AppContext = Depends(get_ctx)) -> TestQueuedOut | JSONResponse:
    """Queue a TEST notification; see how it went in `/deliveries` a few seconds later. At most 5 a minute
    per user: beyond, 429 with `Retry-After` (seconds)."""
    limiter = ctx.extras.get(_TEST_LIMITER) or ctx.extras.setdefault(_TEST_LIMITER, svc.SendTestLimiter())
    try:
        row = svc.send_test(session, principal, channel_id, limiter=limiter)
    except svc.SendTestThrottled as exc:
        detail = {"code": exc.code, "message": exc.message, "message_code": exc.message_code,
                  "message_params": exc.message_params}
        return JSONResponse({"detail": detail}, status_code=429,
                            headers={"Retry-After": str(exc.retry_after_s)})
    background.add_task(_wake, ctx)  # after the commit: the sender then finds the row at once
    return TestQueuedOut(delivery_id=row.id, channel_id=channel_id, event=row.event)


@router.get("/{channel_id}/deliveries", response_model=list[DeliveryOut], responses=_ERR)
def deliveries(channel_id: RowId, principal: Principal = Depends(current_principal),
               session: Session = Depends(get_session, scope="function")) -> list[DeliveryOut]:
    """The channel's last 20 notifications, newest first: event, attempts, when delivered, the last error."""
    return [DeliveryOut.model_validate({**_columns(r), "state": svc.delivery_state(r)})
            for r in svc.list_deliveries(session, principal, channel_id)]


def _columns(row: Any) -> dict[str, Any]:
    return {k: getattr(row, k) for k in ("id", "event", "task_id", "attempts", "created_at", "delivered_at",
                                         "next_attempt_at", "last_error")}
