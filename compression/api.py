"""Gateway endpoints of the compression engine. Routes and schemas are fixed by SPEC 11; the engine
behind them lands with the engine and trigger issues, until then they answer 501."""

from __future__ import annotations

from typing import Annotated

from django.http import HttpRequest
from ninja import Router, Schema, Status
from pydantic import ConfigDict, Field

from sessions_app.api.schemas import ErrorOut
from sessions_app.services import get_session_for_channel

router = Router(tags=["compression"])
ERRORS = {401: ErrorOut, 404: ErrorOut, 422: ErrorOut, 501: ErrorOut}


class CompressIn(Schema):
    around_position: Annotated[int, Field(ge=0)] | None = Field(
        None, description="Compress only near this message position (local compression)."
    )
    focus: Annotated[str, Field(max_length=500)] | None = Field(
        None, description="A topic the summary should keep in most detail."
    )
    model_config = ConfigDict(extra="forbid")


class TurnIn(Schema):
    content: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(max_length=200)] | None = None
    model_config = ConfigDict(extra="forbid")


@router.post("/sessions/{session_id}/compress", response={200: dict, **ERRORS})
def compress(request: HttpRequest, session_id: str, payload: CompressIn | None = None):
    """Manual compression (bypasses cooldown and anti-thrash). Not implemented yet: 501."""
    get_session_for_channel(request.auth, session_id)
    return Status(501, {"detail": "Compression is not implemented yet in this version."})


@router.post("/sessions/{session_id}/turn", response={200: dict, **ERRORS})
def turn(request: HttpRequest, session_id: str, payload: TurnIn):
    """The gateway's inbound user message: hygiene, preflight, model call. Not built yet: 501."""
    get_session_for_channel(request.auth, session_id)
    return Status(501, {"detail": "The agent turn is not implemented yet in this version."})
