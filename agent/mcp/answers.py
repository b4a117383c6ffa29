"""What each tool answers: a schema for its structured content, and the same said as text a
person (or a model that ignores structured content) can read."""

from __future__ import annotations

import html
import re
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, Field


class Row(BaseModel):
    position: int
    role: str
    kind: str = Field(description="live, summary, archived, rolled_back or notice.")
    created_at: datetime
    text: str = Field(description="The row's text; tool calls as '[calls name(arguments)]'.")
    covered_by: int | None = Field(
        None, description="An archived original: the position of the summary that replaced it."
    )


class Hit(BaseModel):
    session_id: UUID
    session_title: str
    external_id: str | None
    position: int
    role: str
    kind: str = Field(description="live, summary or archived (replaced by a summary).")
    created_at: datetime
    excerpt: str = Field(description="The matching text, matches between ⟦ and ⟧.")
    covered_by: int | None = Field(
        None, description="An archived hit: the position of the summary that replaced it."
    )
    window: list[Row] = Field(description="The rows around the hit, as the conversation had them.")
    first_position: int = Field(description="The conversation's first position (a bookmark).")
    last_position: int = Field(description="Its last position (a bookmark).")


class SearchAnswer(BaseModel):
    query: str
    index: str | None = Field(description="words, bigram, trigram or scan; null if none matched.")
    total: int
    total_exact: bool
    has_more: bool
    offset: int
    hits: list[Hit]


class Messages(BaseModel):
    session_id: UUID
    rows: list[Row]
    last_position: int = Field(description="The session's last position.")


class SessionItem(BaseModel):
    id: UUID
    external_id: str | None
    title: str
    model: str
    live_messages: int
    live_tokens: int
    total_messages: int
    compressions: int
    last_activity_at: datetime
    archived: bool


class Sessions(BaseModel):
    sessions: list[SessionItem]
    has_more: bool


class Context(BaseModel):
    session_id: UUID
    messages: list[dict[str, Any]] = Field(
        description="OpenAI chat messages, as sent to the model."
    )
    live_tokens: int


class Pinned(BaseModel):
    session_id: UUID
    position: int
    pinned: bool


class Block(BaseModel):
    label: str
    text: str
    scope: Literal["channel", "session"]
    token_count: int


class Memory(BaseModel):
    blocks: list[Block]
    memory_tokens: int


class Deleted(BaseModel):
    label: str
    scope: Literal["channel", "session"]
    deleted: bool


class Compressed(BaseModel):
    session_id: UUID
    outcome: str = Field(description="compressed, fallback, skipped, failed or queued.")
    live_tokens: int | None = None
    live_messages: int | None = None
    continued_in: str | None = None
    task_id: str | None = None
    error: str | None = None
    retention: float | None = Field(
        None, description="The last written summary's share of its span's salient items kept."
    )
    salient_missed: list[str] | None = None


_MARK = re.compile(r"<mark>(.*?)</mark>", re.S)


def plain_excerpt(excerpt_html: str) -> str:
    return html.unescape(_MARK.sub(lambda m: f"⟦{m.group(1)}⟧", excerpt_html))


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M")


def _row_line(row: Row) -> str:
    where = f"#{row.position} {row.role}"
    if row.kind != "live":
        where += f", {row.kind}"
    if row.covered_by is not None:
        where += f" (under the summary at #{row.covered_by})"
    text = row.text if len(row.text) <= 400 else row.text[:399] + "…"
    return f"{where} · {_when(row.created_at)}: {text}"


def search_text(answer: SearchAnswer) -> str:
    if not answer.hits:
        asked = answer.query if len(answer.query) <= 80 else answer.query[:79] + "…"
        return f"Nothing matched {asked!r}. Try other words, a shorter phrase, or no filter."
    count = f"{answer.total:,}" + ("" if answer.total_exact else "+")
    asked = answer.query if len(answer.query) <= 80 else answer.query[:79] + "…"
    lines = [f"{count} match(es) for {asked!r}; showing {len(answer.hits)}:"]
    for hit in answer.hits:
        place = f"{hit.session_title or hit.external_id or hit.session_id} #{hit.position}"
        status = hit.kind + (
            f", under the summary at #{hit.covered_by}" if hit.covered_by is not None else ""
        )
        lines.append(f"\n• {place} ({hit.role}, {status}, {_when(hit.created_at)})")
        # Unmarked: a model copies an identifier from here, and ⟦ ⟧ inside it would break it.
        lines.append(f"  {hit.excerpt.replace('⟦', '').replace('⟧', '')}")
        for row in hit.window:
            if row.position != hit.position:
                lines.append(f"    {_row_line(row)}")
    if answer.has_more:
        lines.append(f"\nMore: search again with offset {answer.offset + len(answer.hits)}.")
    return "\n".join(lines)


def messages_text(answer: Messages) -> str:
    if not answer.rows:
        return "No rows there."
    return "\n".join(_row_line(row) for row in answer.rows)


def sessions_text(answer: Sessions) -> str:
    if not answer.sessions:
        return "No sessions."
    lines = []
    for s in answer.sessions:
        name = s.title or s.external_id or str(s.id)
        lines.append(
            f"{name} — id {s.id}, {s.total_messages:,} messages ({s.live_messages:,} live, "
            f"{s.live_tokens:,} tokens), {s.compressions} compression(s), last active "
            f"{_when(s.last_activity_at)}" + (" [archived]" if s.archived else "")
        )
    if answer.has_more:
        lines.append("More: list again with a higher offset.")
    return "\n".join(lines)


def context_text(answer: Context) -> str:
    lines = [f"{len(answer.messages)} messages, {answer.live_tokens:,} live tokens:"]
    for message in answer.messages:
        content = message.get("content")
        text = content if isinstance(content, str) else str(content or "")
        lines.append(f"[{message.get('role')}] {text[:300]}")
    return "\n".join(lines)


def memory_text(answer: Memory) -> str:
    if not answer.blocks:
        return "No memory blocks."
    return "\n".join(
        f"{b.label} ({b.scope}, {b.token_count} tokens): {b.text}" for b in answer.blocks
    )
