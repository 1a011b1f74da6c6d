"""`POST /admin/reload`: re-read the KB and rules without a restart. Mounted only when an admin token
is configured; the new KB and rules must pass every lint check before they replace the ones in
service, so a bad edit never takes the service down."""

from __future__ import annotations

import secrets
import threading
from datetime import date
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from api import heap
from engine.models.service import Reloaded, ReloadRefused
from engine.models.views import ErrorDetail
from engine.problems import KBInvalid
from engine.recommend import Advisor, load_advisor

bearer = HTTPBearer(auto_error=False, description="the admin token the service was started with")
_reloading = threading.Lock()


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
    },
)
def reload(request: Request) -> Reloaded | JSONResponse:
    """Validate the KB and rules on disk; if they are clean, answer from them from now on. If not,
    keep serving the last good ones and list the problems."""
    with _reloading:  # one reload at a time; requests keep being answered meanwhile
        current: Advisor = request.app.state.advisor
        try:
            fresh = load_advisor(
                current.kb.root, request.app.state.rules_root, request.app.state.data_root, date.today()
            )
        except KBInvalid as invalid:
            refused = ReloadRefused(
                detail=f"reload refused: {len(invalid.problems)} problem(s); still serving {current.version}",
                problems=[str(problem) for problem in invalid.problems],
            )
            return JSONResponse(status_code=409, content=refused.model_dump())
        fresh.warm()
        previous_version = current.version
        request.app.state.advisor = fresh
        request.app.state.kb_changed()
        del current  # kept below only by its version, so `settle` can free it
        heap.settle()
    return Reloaded(
        kb_version=fresh.version,
        previous_kb_version=previous_version,
        gpus=len(fresh.kb.gpus),
        offers=len(fresh.kb.offers),
        rules=len(fresh.rules),
    )
