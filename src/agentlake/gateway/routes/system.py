"""System routes: ``GET /health`` (always open) and ``GET /models`` (model servers' status)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from agentlake import __version__
from agentlake.gateway import operations
from agentlake.gateway.schemas import Health, ModelsResponse
from agentlake.gateway.security import require
from agentlake.http.errors import COMMON_ERRORS

router = APIRouter(tags=["system"])


@router.get(
    "/health",
    response_model=Health,
    summary="Liveness; never needs a key.",
    responses={500: COMMON_ERRORS[500]},
)
async def health(request: Request) -> Health:
    """The process answers. Open even when API keys are configured; reveals nothing else."""
    services = request.app.state.services
    return Health(
        version=__version__, uptime_s=services.uptime_s(), auth=bool(services.settings.api_key_scopes)
    )


@router.get(
    "/models",
    response_model=ModelsResponse,
    summary="Model providers, reachability, loaded models.",
    dependencies=[Depends(require("read"))],
    responses=COMMON_ERRORS,
)
def models(request: Request) -> ModelsResponse:
    """Every configured model (settings, models file, what the servers offer), whether its server
    answers, its context window, and whether it is loaded now (Ollama's /api/ps). Replaces /vram."""
    return operations.models(request.app.state.services)
