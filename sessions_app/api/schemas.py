"""Request and response shapes of the gateway API (they are also the OpenAPI schema)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from ninja import Schema
from pydantic import BaseModel, ConfigDict, Field

from sessions_app.models import Message, Session

MAX_BATCH = 1_000
MAX_TOKENS = 2**40  # far above any context window; keeps integers inside SQL ranges


class SessionCreateIn(Schema):
    model: Annotated[str, Field(max_length=200)] = ""
    context_window: Annotated[int, Field(ge=1024, le=100_000_000)] | None = Field(
        None,
        description="Tokens. Optional for known models; see GET /sessions/{id} for the value used.",
    )
    system_prompt: str | None = None
    title: Annotated[str, Field(max_length=300)] = ""
    external_id: Annotated[str, Field(min_length=1, max_length=200)] | None = Field(
        None,
        description="The gateway's own id (chat id...); re-opening with it returns that session.",
    )
    codex_thread_id: Annotated[str, Field(min_length=1, max_length=200)] | None = Field(
        None,
        description="The model runs through a Codex app server in this thread: compaction "
        "follows compression.codex_app_server_auto (native, managed or off).",
    )
    model_config = ConfigDict(extra="forbid")


class Counters(Schema):
    live_messages: int
    live_tokens: int
    total_messages: int
    compressions: int


class Usage(Schema):
    last_prompt_tokens: int | None
    last_completion_tokens: int | None
    last_usage_at: datetime | None


class Guard(Schema):
    cooldown_until: datetime | None
    thrash_lock_until: datetime | None
    failure_streak: int
    ineffective_streak: int


class SessionOut(Schema):
    id: UUID
    channel: str
    external_id: str | None
    title: str
    model: str
    context_window: int
    context_window_source: str
    counters: Counters
    usage: Usage
    guard: Guard
    created_at: datetime
    last_activity_at: datetime
    last_reset_at: datetime | None
    codex_thread_id: str | None = None

    @staticmethod
    def of(session: Session) -> dict[str, Any]:
        return {
            "id": session.id,
            "channel": session.channel.name,
            "external_id": session.external_id,
            "title": session.title,
            "model": session.model,
            "context_window": session.context_window,
            "context_window_source": session.context_window_source,
            "counters": {
                "live_messages": session.live_messages,
                "live_tokens": session.live_tokens,
                "total_messages": session.total_messages,
                "compressions": session.compressions,
            },
            "usage": {
                "last_prompt_tokens": session.last_prompt_tokens,
                "last_completion_tokens": session.last_completion_tokens,
                "last_usage_at": session.last_usage_at,
            },
            "guard": {
                "cooldown_until": session.cooldown_until,
                "thrash_lock_until": session.thrash_lock_until,
                "failure_streak": session.failure_streak,
                "ineffective_streak": session.ineffective_streak,
            },
            "created_at": session.created_at,
            "last_activity_at": session.last_activity_at,
            "last_reset_at": session.last_reset_at,
            "codex_thread_id": ((session.provider_state or {}).get("codex") or {}).get("thread_id"),
        }


class FunctionCallIn(BaseModel):
    name: Annotated[str, Field(min_length=1, max_length=200)]
    arguments: str = Field("", description="JSON-encoded arguments, as the model produced them.")
    model_config = ConfigDict(extra="allow")


class ToolCallIn(BaseModel):
    id: Annotated[str, Field(min_length=1, max_length=200)]
    type: Literal["function"] = "function"
    function: FunctionCallIn
    model_config = ConfigDict(extra="allow")


class ContentPartIn(BaseModel):
    type: Annotated[str, Field(min_length=1, max_length=50)]
    text: str | None = None
    model_config = ConfigDict(extra="allow")


class MessageIn(BaseModel):
    """An OpenAI chat message. Unknown fields are kept and replayed in the context verbatim.

    (A plain pydantic model, not ninja's Schema, so that extra fields survive validation.)"""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | list[ContentPartIn] | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    name: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    model_config = ConfigDict(extra="allow")


class UsageIn(BaseModel):
    prompt_tokens: Annotated[int, Field(ge=0, le=MAX_TOKENS)] | None = None
    completion_tokens: Annotated[int, Field(ge=0, le=MAX_TOKENS)] | None = None
    total_tokens: Annotated[int, Field(ge=0, le=MAX_TOKENS)] | None = None
    input_tokens: Annotated[int, Field(ge=0, le=MAX_TOKENS)] | None = None
    output_tokens: Annotated[int, Field(ge=0, le=MAX_TOKENS)] | None = None
    model_config = ConfigDict(extra="allow")


class AppendIn(BaseModel):
    messages: Annotated[list[MessageIn], Field(min_length=1, max_length=MAX_BATCH)]
    usage: UsageIn | None = Field(None, description="Usage the model reported for the last call.")
    model_config = ConfigDict(extra="forbid")


class MessageOut(Schema):
    id: int
    position: int
    role: str
    kind: str
    content: str | None
    content_parts: list[Any] | None
    tool_calls: list[Any] | None
    tool_call_id: str | None
    name: str | None
    token_count: int
    is_summary: bool
    is_fallback_summary: bool
    summarized_by: int | None
    covers_from_position: int | None
    covers_to_position: int | None
    archive_reason: str | None
    created_at: datetime
    archived_at: datetime | None
    rolled_back_at: datetime | None

    @staticmethod
    def of(message: Message) -> dict[str, Any]:
        return {
            "id": message.pk,
            "position": message.position,
            "role": message.role,
            "kind": message.kind,
            "content": message.content,
            "content_parts": message.content_parts,
            "tool_calls": message.tool_calls,
            "tool_call_id": message.tool_call_id,
            "name": message.name,
            "token_count": message.token_count,
            "is_summary": message.is_summary,
            "is_fallback_summary": message.is_fallback_summary,
            "summarized_by": message.summarized_by_id,
            "covers_from_position": message.covers_from_position,
            "covers_to_position": message.covers_to_position,
            "archive_reason": message.archive_reason,
            "created_at": message.created_at,
            "archived_at": message.archived_at,
            "rolled_back_at": message.rolled_back_at,
        }


class Decision(Schema):
    trigger: str
    action: str
    reason: str


class AppendOut(Schema):
    session: SessionOut
    messages: list[MessageOut]
    decisions: list[Decision] = Field(
        description="What each automatic trigger decided after this write (fire, skip and why)."
    )


class ContextOut(Schema):
    session_id: UUID
    messages: list[dict[str, Any]]
    message_count: int
    live_tokens: int


class MessagePage(Schema):
    items: list[MessageOut]
    next_after: int | None = Field(
        description="Pass as `after` to get the next page; null at the end."
    )


class RollbackIn(Schema):
    count: Annotated[int, Field(ge=1, le=10_000)] = 1
    mode: Literal["undo", "regenerate"] = "undo"
    model_config = ConfigDict(extra="forbid")


class RollbackOut(Schema):
    session: SessionOut
    rolled_back: list[MessageOut]


class ResetIn(Schema):
    keep_system_prompt: bool = True
    model_config = ConfigDict(extra="forbid")


class ResetOut(Schema):
    session: SessionOut
    archived: int


class ErrorOut(Schema):
    detail: str
