"""Recall endpoint. The route and its query parameters are fixed by SPEC 11; the FTS5 recall layer
lands with the recall issue, until then it answers 501."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from django.http import HttpRequest
from ninja import Query, Router, Schema, Status
from pydantic import Field

from sessions_app.api.schemas import ErrorOut

router = Router(tags=["search"])


class SearchQuery(Schema):
    q: str = Field(min_length=1, max_length=1000)
    session: str | None = None
    role: Literal["system", "user", "assistant", "tool"] | None = None
    kind: Literal["live", "summary", "archived"] | None = None
    since: datetime | None = None
    until: datetime | None = None
    window: int = Field(2, ge=0, le=20)
    limit: int = Field(20, ge=1, le=100)


@router.get("/search", response={200: dict, 401: ErrorOut, 422: ErrorOut, 501: ErrorOut})
def search(request: HttpRequest, query: Query[SearchQuery]):
    """Full-text recall over live, archived and summary rows. Not implemented yet: 501."""
    return Status(501, {"detail": "Search is not implemented yet in this version."})
