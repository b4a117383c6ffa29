"""The live context: what the model sees next (head + summary + tail)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import connections

from sessions_app.models import Message, Session, openai_message

USER, ASSISTANT, TOOL = Message.Role.USER, Message.Role.ASSISTANT, Message.Role.TOOL
LIVE_ORDER = ("position", "-is_summary", "id")


def live_rows(session: Session) -> list[Message]:
    """In conversation order. A summary sorts before a live original at its own position, which
    only happens when a fold stored its summary but could not archive what it covered."""
    return list(Message.objects.filter(session=session, active=True).order_by(*LIVE_ORDER))


@dataclass(slots=True)
class ContextRow:
    """What the live context reads of a row, without a model instance: building 1,000 Message
    objects (and converting their dates, ids and flags) cost several times the query itself."""

    pk: int
    position: int
    role: str
    content: str | None
    content_parts: Any
    extra: Any
    tool_calls: Any
    tool_call_id: str | None
    name: str | None
    pruned_content: str | None
    pruned_tool_calls: Any
    is_summary: bool
    provider_item: Any
    origin: Any

    def as_openai(self) -> dict:
        return openai_message(self)


RowT = TypeVar("RowT", Message, ContextRow)
CONTEXT_COLUMNS = tuple(f.name for f in ContextRow.__dataclass_fields__.values())


def context_rows(session: Session) -> list[ContextRow]:
    """The live rows in conversation order, as :func:`live_rows` reads them, lighter: the ORM's
    statement run on its cursor, so each value is converted once here rather than by Django's
    per-row converter loop (two fifths of the read in a profile)."""
    query = (
        Message.objects.filter(session=session, active=True)
        .order_by(*LIVE_ORDER)
        .values_list(*CONTEXT_COLUMNS)
    )
    sql, params = query.query.sql_with_params()
    with connections[query.db].cursor() as cursor:
        cursor.execute(sql, params)
        fetched = cursor.fetchall()
    return [
        ContextRow(
            pk,
            position,
            role,
            content,
            _json(parts),
            _json(extra),
            _json(calls),
            call_id,
            name,
            pruned,
            _json(pruned_calls),
            bool(summary),
            _json(item),
            _json(origin),
        )
        for (
            pk,
            position,
            role,
            content,
            parts,
            extra,
            calls,
            call_id,
            name,
            pruned,
            pruned_calls,
            summary,
            item,
            origin,
        ) in fetched
    ]


def _json(value: Any) -> Any:
    """A JSON column's text as JSONField reads it: None stays None, text that is not JSON as it
    is. (orjson reads it no faster here, and turns an integer past 64 bits into a float.)"""
    if value is None or not isinstance(value, str | bytes):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


@dataclass(frozen=True)
class Placement:
    role: str
    merged: bool  # sent ahead of the next message's own text, not as a message of its own


def place_summary(after: str | None, before: str | None) -> Placement:
    """A summary's role between a message of role ``after`` and one of role ``before`` (None:
    none), so that no two user or two assistant messages meet (providers that enforce
    alternation refuse that). After the system prompt or nothing only a user message fits (a
    conversation opens with the user), after an assistant message a user one, after a user
    message an assistant one, after a tool result either (user first); a role equal to the next
    message's is ruled out too. Where nothing is left (assistant | user, user | assistant,
    system | user) the summary goes ahead of the next message's own text, as Hermes Agent
    does."""
    if after == TOOL:
        candidates = [USER, ASSISTANT]
    elif after == USER:
        candidates = [ASSISTANT]
    else:
        candidates = [USER]
    fitting = [role for role in candidates if role != before]
    if fitting:
        return Placement(fitting[0], False)
    return Placement(str(before), True)


def _summary_run(rows: Sequence[Message | ContextRow], start: int) -> int:
    """The end of the run of summaries starting at ``start``. Rows carrying a provider's item,
    which only that provider reads, stand alone; so do imported summaries, which the system that
    wrote them already placed (Hermes Agent merges a summary into a tail message where no role
    fits) and which are sent as that system sent them."""
    end = start
    while end < len(rows) and _placed_here(rows[end]):
        end += 1
    return end


def _placed_here(row: Message | ContextRow) -> bool:
    return row.is_summary and row.provider_item is None and row.origin is None


def sent(
    rows: Sequence[RowT],
) -> Iterator[tuple[RowT, dict[str, Any]]]:
    """Each message the live context sends, with the row it comes from. Summaries are placed
    here, from the neighbours they have now (a rollback or a reset may have changed them since
    the summary was written): adjacent summaries travel as one message, in the role that keeps
    roles alternating, or ahead of the next message's own text where no role does."""
    previous: str | None = None
    lead: str | None = None
    index = 0
    while index < len(rows):
        row = rows[index]
        end = _summary_run(rows, index)
        if end > index:
            text = "\n\n".join(r.content or "" for r in rows[index:end])
            following = rows[end].role if end < len(rows) else None
            place = place_summary(previous, following)
            if place.merged:
                lead = text if lead is None else f"{lead}\n\n{text}"
            else:
                message = {"role": place.role, "content": _prepend(lead, text)}
                lead, previous = None, place.role
                yield row, message
            index = end
            continue
        message = row.as_openai()
        if lead is not None:
            message["content"] = _prepend(lead, message.get("content"))
            lead = None
        previous = message["role"]
        yield row, message
        index += 1


def as_messages(rows: Sequence[RowT]) -> list[dict[str, Any]]:
    """Rows as an OpenAI ``messages`` array, ready to send."""
    return [message for _, message in sent(rows)]


def _prepend(lead: str | None, content: Any) -> Any:
    if lead is None:
        return content
    if isinstance(content, list):
        return [{"type": "text", "text": lead}, *content]
    return f"{lead}\n\n{content}" if content else lead


def external_context(session: Session) -> str | None:
    """Where the model's own context lives when it is not this session's rows -- ``"codex"``: a
    Codex app-server thread (opened with ``codex_thread_id``) -- or None. Compacting such a
    session is that place's job; our rows stay the searchable transcript."""
    codex = (session.provider_state or {}).get("codex") or {}
    return "codex" if codex.get("thread_id") else None


def live_context(session: Session) -> list[dict[str, Any]]:
    """The live rows as an OpenAI ``messages`` array, ready to send, with the session's memory
    blocks in its system context."""
    from sessions_app.services.memory import with_memory

    return with_memory(session, as_messages(context_rows(session)))
