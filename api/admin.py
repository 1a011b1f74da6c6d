"""`POST /admin/reload`: re-read the KB and rules without a restart. Mounted only when an admin token
is configured; the new KB and rules must pass every lint check before they replace the ones in
service, so a bad edit never takes the service down."""

from __future__ import annotations

import logging
import secrets
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from api import metrics
from api.lifecycle import ServedKB
from engine.maintenance import CheckFailed, KBInvalid
from engine.models.service import Reloaded, ReloadRefused, ReloadUnfinished
from engine.models.views import ErrorDetail

bearer = HTTPBearer(auto_error=False, description="the admin token the service was started with")
log = logging.getLogger("gpu_advisor.api")


def require_admin(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> None:
    token: str = request.app.state.admin_token
    given = credentials.credentials if credentials is not None else ""
    if not secrets.compare_digest(given.encode(), token.encode()):
        raise HTTPException(
            status_code=401,
            detail="a valid admin token is required (Authorization: Bearer <token>)",
            headers={"WWW-Authenticate": "Bearer"},
        )


router = APIRouter(dependencies=[Depends(require_admin)], tags=["admin"])


@router.post(
    "/admin/reload",
    response_model=Reloaded,
    responses={
        401: {"model": ErrorDetail, "description": "missing or wrong admin token"},
        409: {"model": ReloadRefused, "description": "the new KB or rules have problems; nothing changed"},
        503: {
            "model": ReloadUnfinished,
            "description": "the check could not run, or not every worker confirmed the new KB in time",
        },
    },
)
def reload(request: Request) -> Reloaded | JSONResponse:
    """Validate the KB and rules on disk; if they are clean, answer from them from now on, on every
    worker process; the answer comes once all of them do. If not, keep serving the last good ones
    and list the problems. Sync on purpose: it runs in a thread while requests are answered."""
    served: ServedKB = request.app.state.served
    try:
        done = served.reload()
    except KBInvalid as invalid:
        refused = ReloadRefused(
            detail=f"reload refused: {len(invalid.problems)} problem(s); "
            f"still serving {served.advisor.version}",
            problems=[str(problem) for problem in invalid.problems],
        )
        metrics.RELOADS.labels(outcome="refused").inc()
        return JSONResponse(status_code=409, content=refused.model_dump())
    except CheckFailed as failed:
        log.error("reload failed: %s", failed)
        unfinished = ReloadUnfinished(
            detail=f"reload failed: {failed}; still serving {served.advisor.version}",
            kb_version=served.advisor.version,
            workers_switched=0,
            workers=served.generations.workers,
        )
        metrics.RELOADS.labels(outcome="unfinished").inc()
        return JSONResponse(status_code=503, content=unfinished.model_dump())
    fresh, state = done.fresh, done.convergence
    if not state.complete:
        why = (
            "a newer reload replaced it"
            if state.superseded_by
            else f"{state.switched} of {state.expected} workers confirmed it in time; the others switch "
            "when they can, or restart the service"
        )
        unfinished = ReloadUnfinished(
            detail=f"the new KB {fresh.version} is published, but {why}",
            kb_version=fresh.version,
            workers_switched=state.switched,
            workers=state.expected,
        )
        metrics.RELOADS.labels(outcome="unfinished").inc()
        return JSONResponse(status_code=503, content=unfinished.model_dump())
    metrics.RELOADS.labels(outcome="switched").inc()
    return Reloaded(
        kb_version=fresh.version,
        previous_kb_version=done.previous.version,
        gpus=len(fresh.kb.gpus),
        offers=len(fresh.kb.offers),
        rules=len(fresh.rules),
        changed=fresh is not done.previous,
        workers=state.switched,
    )
