"""Thin HTTP routes: look up, return the response model. No logic lives here."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request

from engine.kb import KB
from engine.models.kb import Gpu
from engine.models.views import ErrorDetail, GpuSummary, Health, Version

router = APIRouter()


def current_kb(request: Request) -> KB:
    kb: KB = request.app.state.kb
    return kb


CurrentKB = Annotated[KB, Depends(current_kb)]


@router.get("/healthz", response_model=Health, tags=["service"])
def healthz(kb: CurrentKB) -> Health:
    """Liveness: the service is up with a validated knowledge base."""
    return Health(status="ok", kb_version=kb.version)


@router.get("/version", response_model=Version, tags=["service"])
def version(request: Request, kb: CurrentKB) -> Version:
    """Service version, knowledge-base version and the date of the newest prices."""
    dates = [offer.as_of for offer in kb.offers.values()]
    return Version(
        version=request.app.version,
        kb_version=kb.version,
        prices_as_of=max(dates).isoformat() if dates else None,
    )


@router.get("/gpus", response_model=list[GpuSummary], tags=["knowledge base"])
def list_gpus(kb: CurrentKB) -> list[GpuSummary]:
    """Every accelerator in the knowledge base, in id order."""
    return [GpuSummary.of(gpu) for gpu in kb.gpus.values()]


@router.get(
    "/gpus/{gpu_id}", response_model=Gpu, responses={404: {"model": ErrorDetail}}, tags=["knowledge base"]
)
def get_gpu(gpu_id: str, kb: CurrentKB) -> Gpu:
    """One accelerator with every KB field and its sources."""
    gpu = kb.gpus.get(gpu_id)
    if gpu is None:
        raise HTTPException(status_code=404, detail=f"unknown gpu id {gpu_id!r}")
    return gpu
