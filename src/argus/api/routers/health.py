"""/api/v2/health: unauthenticated readiness probe."""

from fastapi import APIRouter, Depends
from sqlalchemy import text

from argus.api.context import AppContext
from argus.api.deps import get_ctx

router = APIRouter(prefix="/api/v2", tags=["health"])


@router.get("/health")
def health(ctx: AppContext = Depends(get_ctx)) -> dict[str, str]:
    with ctx.db.session() as session:
        session.execute(text("SELECT 1"))
    return {"status": "ok"}
