"""``session_search``: the tool that gives the model back what compression took out of its
context. Every original stays searchable (S5); this lets the model itself ask -- by words, or by
the positions a summary names -- in the turn the service runs, and through the API for gateways
that run their own model loop.

A call never raises: bad arguments, an unknown tool or a failing search answer the model with a
short error it can act on, and the turn goes on.
"""

from __future__ import annotations

import html
import json
import logging
import re
from typing import Any

from django.db import DatabaseError

from core.config import get_config
from core.errors import report
from search.filters import Filters
from search.query import MAX_QUERY_CHARS, InvalidQuery
from search.service import search
from sessions_app.models import Message, Session
from sessions_app.selectors.messages import conversation_near

logger = logging.getLogger(__name__)

NAME = "session_search"
AROUND_RADIUS = 4  # rows either side of a position asked for with ``around``


def schema() -> dict[str, Any]:
    """The tool in OpenAI's tool-calling format."""
    return {
        "type": "function",
        "function": {
            "name": NAME,
            "description": (
                "Search everything said in this conversation, including earlier messages that "
                "were summarised out of your context (a summary names the positions it covers). "
                'Give `query` to search by words ("a phrase", prefix*), or `around` with a '
                "position to read the original messages there."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "maxLength": MAX_QUERY_CHARS,
                        "description": "Words to find; Chinese and code work too.",
                    },
                    "scope": {
                        "type": "string",
                        "enum": ["session", "channel"],
                        "description": "This conversation (default) or every conversation of "
                        "this channel.",
                    },
                    "limit": {"type": "integer", "minimum": 1, "maximum": 20},
                    "around": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "A message position: returns the messages around it "
                        "instead of searching.",
                    },
                },
                "additionalProperties": False,
            },
        },
    }


class _Refused(Exception):
    """An argument the model can fix: said back to it as the tool's answer."""


def run(session: Session, arguments: str | dict[str, Any] | None) -> dict[str, Any]:
    """One call. ``arguments`` as the model sent them (a JSON string) or already parsed."""
    try:
        args = _arguments(arguments)
        if args.get("around") is not None:
            return _around(session, args["around"])
        return _search(session, args)
    except _Refused as refused:
        return {"error": str(refused)}
    except InvalidQuery as invalid:
        return {"error": str(invalid)}
    except DatabaseError as exc:
        message = report(exc, f"a session_search call in session {session.pk}")
        return {"error": f"the search failed ({message}); try again or another query"}


def as_content(result: dict[str, Any]) -> str:
    """A tool result's ``content``: compact JSON, non-ASCII as itself."""
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))


def _arguments(arguments: str | dict[str, Any] | None) -> dict[str, Any]:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            raise _Refused('arguments must be a JSON object, e.g. {"query": "deploy"}') from None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise _Refused('arguments must be a JSON object, e.g. {"query": "deploy"}')
    unknown = sorted(set(arguments) - {"query", "scope", "limit", "around"})
    if unknown:
        raise _Refused(
            f"unknown argument(s): {', '.join(unknown)}; use query, scope, limit, around"
        )
    around = arguments.get("around")
    if around is not None and (isinstance(around, bool) or not isinstance(around, int)):
        raise _Refused("around must be a message position (a whole number)")
    if around is None and not isinstance(arguments.get("query"), str):
        raise _Refused("give query (words to find) or around (a message position)")
    scope = arguments.get("scope", "session")
    if scope not in ("session", "channel"):
        raise _Refused('scope must be "session" or "channel"')
    limit = arguments.get("limit", get_config().recall.default_limit)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 20:
        raise _Refused("limit must be a whole number from 1 to 20")
    return {**arguments, "scope": scope, "limit": limit}


def _search(session: Session, args: dict[str, Any]) -> dict[str, Any]:
    if args["scope"] == "session":
        filters = Filters(session_id=session.pk)
    else:
        filters = Filters(channel_id=session.channel_id)
    answer = search(args["query"], filters, limit=args["limit"], window=0)
    chars = get_config().recall.excerpt_chars
    hits = []
    for hit in answer.hits:
        row = {
            "position": hit.message.position,
            "role": hit.message.role,
            "kind": hit.message.kind,
            "time": hit.message.created_at.isoformat(timespec="seconds"),
            "excerpt": _plain(hit.excerpt_html)[:chars],
        }
        if hit.session.pk != session.pk:
            row["session"] = hit.session.title or str(hit.session.pk)
        hits.append(row)
    out: dict[str, Any] = {"query": args["query"], "scope": args["scope"], "hits": hits}
    if answer.total:
        out["total"] = answer.total if answer.total_exact else f"at least {answer.total}"
    if not hits:
        out["note"] = "nothing matched; try other words, a shorter phrase, or scope channel"
    return out


def _around(session: Session, position: int) -> dict[str, Any]:
    """The rows at and around ``position``, as the conversation had them."""
    if position < 0:  # the schema's minimum: not a window of the first rows
        raise _Refused(f"no message at position {position}; positions start at 0")
    rows = conversation_near(session, position, AROUND_RADIUS)
    if not rows:
        raise _Refused(
            f"no message at position {position}; this conversation has positions 0 to "
            f"{max(session.next_position - 1, 0)}"
        )
    chars = get_config().recall.excerpt_chars
    return {
        "around": position,
        "messages": [
            {
                "position": row.position,
                "role": row.role,
                "kind": row.kind,
                "time": row.created_at.isoformat(timespec="seconds"),
                "content": row_text(row)[: chars * 4],
            }
            for row in rows
        ],
    }


def row_text(row: Message) -> str:
    """A row's text as a tool shows it: its content, then each tool call it made."""
    text = row.content or ""
    for call in row.tool_calls or ():
        function = call.get("function") or {}
        text += f"\n[calls {function.get('name', '?')}({function.get('arguments', '')})]"
    return text.strip()


_MARK = re.compile(r"</?mark>")


def _plain(excerpt_html: str) -> str:
    return html.unescape(_MARK.sub("", excerpt_html))
