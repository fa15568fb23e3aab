"""System routes: ``GET /health`` (always open), ``GET /models`` (model servers' status) and
``GET /vram`` (loaded models and memory, for clients of the system agentlake grew from)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from agentlake import __version__
from agentlake.gateway import operations
from agentlake.gateway.schemas import Health, ModelsResponse, VramResponse
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


@router.get(
    "/vram",
    response_model=VramResponse,
    summary="Loaded models and memory, as the model hosts report them (use /models).",
    dependencies=[Depends(require("read"))],
    responses=COMMON_ERRORS,
    deprecated=True,
)
def vram(request: Request) -> VramResponse:
    """For clients of the system agentlake grew from: the models loaded now and their memory,
    as the Ollama server (/api/ps: size, size_vram) and this process (local: models, its
    resident memory) report them. GET /models is the documented route."""
    return operations.vram(request.app.state.services)
