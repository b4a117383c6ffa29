"""JSON answers as the API writes them: UTF-8 without ``\\uXXXX`` escapes, so Chinese reads as
Chinese in a terminal or a log."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse

CONTENT_TYPE = "application/json; charset=utf-8"


def readable_json(data: Any, encoder: type[json.JSONEncoder] | None = None) -> bytes:
    """``data`` as UTF-8 JSON. A lone surrogate (only an import could have stored one) cannot be
    UTF-8: that answer keeps the escapes rather than failing."""
    text = json.dumps(data, cls=encoder, ensure_ascii=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, cls=encoder).encode("ascii")


def json_answer(data: Any, status: int = 200) -> HttpResponse:
    """An answer already in JSON's types, written as the API's renderer writes it: for a large
    answer built for its schema, which django-ninja would otherwise validate against the schema
    and encode value by value a second time (``search.api``)."""
    return HttpResponse(readable_json(data), status=status, content_type=CONTENT_TYPE)
