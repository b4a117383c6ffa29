"""Request and response shapes of the gateway API (they are also the OpenAPI schema)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from ninja import Schema
from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag
from pydantic_core import PydanticCustomError

from core.bodies import StorableBody
from sessions_app.models import Message, Session

MAX_BATCH = 1_000
MAX_TOKENS = 2**40  # far above any context window; keeps integers inside SQL ranges


def _integral(value: Any) -> Any:
    """JSON Schema's integer includes 5.0; strict validation would refuse it."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# An integer as JSON Schema means it: 5 and 5.0, never "5" or true. Written
# ``Annotated[int, Field(ge=..., le=...), Integral]``: the constraints come before the validator,
# or the schema would show them under pydantic's own names.
Integral = BeforeValidator(_integral)


# Request bodies are JSON: their types are strict (``0`` is not ``false``, ``"5"`` is not 5).
STRICT_BODY = ConfigDict(extra="forbid", strict=True)
# A message keeps every field a model API sent with it, to replay verbatim.
STRICT_MESSAGE = ConfigDict(extra="allow", strict=True)


class SessionCreateIn(StorableBody, Schema):
    model: Annotated[str, Field(max_length=200)] = ""
    context_window: Annotated[int, Field(ge=1024, le=100_000_000), Integral] | None = Field(
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
    recall_tool: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")] = Field(
        "session_search",
        description="The name of the tool the client's model recalls originals with (a "
        "gateway that runs its own model loop and offers this service's recall under another "
        "name); every summary's note and progress notice name it.",
    )
    model_config = STRICT_BODY


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
    cooldown_until: datetime | None = Field(
        description="The last cooldown set; it holds only while in the future (`cooling_down`)."
    )
    thrash_lock_until: datetime | None = Field(
        description="The last anti-thrash lock set; it holds only while in the future "
        "(`thrash_locked`)."
    )
    cooling_down: bool = Field(description="A cooldown holds automatic compression now.")
    thrash_locked: bool = Field(description="The anti-thrash lock holds it now.")
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
    archived_at: datetime | None = None
    codex_thread_id: str | None = None
    next_sequence: int = Field(
        0,
        description="How many messages were appended with a `sequence`: the sequence the next "
        "such batch must start at.",
    )
    recall_tool: str = Field(
        "session_search", description="The recall tool the session's summaries and notices name."
    )

    @staticmethod
    def of(session: Session) -> dict[str, Any]:
        guards = session.guards()
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
                "cooling_down": guards.cooling_until is not None,
                "thrash_locked": guards.locked_until is not None,
                "failure_streak": session.failure_streak,
                "ineffective_streak": session.ineffective_streak,
            },
            "created_at": session.created_at,
            "last_activity_at": session.last_activity_at,
            "last_reset_at": session.last_reset_at,
            "archived_at": session.archived_at,
            "codex_thread_id": ((session.provider_state or {}).get("codex") or {}).get("thread_id"),
            "next_sequence": session.next_sequence,
            "recall_tool": session.recall_tool,
        }


Id = Annotated[str, Field(min_length=1, max_length=200)]


class FunctionCallIn(BaseModel):
    name: Id
    arguments: str = Field("", description="JSON-encoded arguments, as the model produced them.")
    model_config = STRICT_MESSAGE


class ToolCallIn(BaseModel):
    id: Id = Field(description="Unique within its message.")
    type: Literal["function"] = "function"
    function: FunctionCallIn
    model_config = STRICT_MESSAGE


class ContentPartIn(BaseModel):
    type: Annotated[str, Field(min_length=1, max_length=50)]
    text: str | None = None
    model_config = STRICT_MESSAGE


def _content_kind(value: Any) -> str | None:
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "parts"
    return "null" if value is None else None


def _by_shape(allowed: str) -> Discriminator:
    """Chooses a content's shape by the input's own type, so an error names only the shape that
    was sent."""
    return Discriminator(
        _content_kind,
        custom_error_type="content_shape",
        custom_error_message=f"content must be {allowed}",
    )


_Text = Annotated[str, Tag("text")]
_Parts = Annotated[list[ContentPartIn], Tag("parts")]
_Null = Annotated[None, Tag("null")]
# A message's content: a string or a list of parts (or null, for an assistant's).
Content = Annotated[_Text | _Parts, _by_shape("a string or a list of parts")]
ContentOrNull = Annotated[_Text | _Parts | _Null, _by_shape("a string or a list of parts or null")]


def _absent(rule: str) -> BeforeValidator:
    """The validator of a field this role never carries: null or left out (the schema says
    null), refused with ``rule`` as the message otherwise."""

    def check(value: Any) -> Any:
        if value is not None:
            raise PydanticCustomError("not_for_this_role", rule)
        return value

    return BeforeValidator(check)


_ONLY_ASSISTANT = "only assistant messages carry 'tool_calls'"
_ONLY_TOOL = "only tool messages carry 'tool_call_id'"
NoToolCalls = Annotated[None, _absent(_ONLY_ASSISTANT), Field(None, description=_ONLY_ASSISTANT)]
NoToolCallId = Annotated[None, _absent(_ONLY_TOOL), Field(None, description=_ONLY_TOOL)]


class _MessageIn(BaseModel):
    """An OpenAI chat message. Unknown fields are kept and replayed in the context verbatim.

    (A plain pydantic model, not ninja's Schema, so that extra fields survive validation.)"""

    name: Id | None = None
    model_config = STRICT_MESSAGE


class SystemMessageIn(_MessageIn):
    role: Literal["system"]
    content: Content
    tool_calls: NoToolCalls = None
    tool_call_id: NoToolCallId = None


class UserMessageIn(_MessageIn):
    role: Literal["user"]
    content: Content
    tool_calls: NoToolCalls = None
    tool_call_id: NoToolCallId = None


class AssistantMessageIn(_MessageIn):
    """``content`` may be null (or absent) only when the message carries tool calls or, as
    OpenAI's refusals do, a ``refusal``. An empty ``tool_calls`` list is the same as none."""

    role: Literal["assistant"]
    content: ContentOrNull = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: NoToolCallId = None
    model_config = ConfigDict(
        extra="allow",
        strict=True,
        json_schema_extra={
            "anyOf": [
                {"required": ["content"], "properties": {"content": {"not": {"type": "null"}}}},
                {
                    "required": ["tool_calls"],
                    "properties": {"tool_calls": {"type": "array", "minItems": 1}},
                },
                {"required": ["refusal"], "properties": {"refusal": {"type": "string"}}},
            ]
        },
    )


class ToolMessageIn(_MessageIn):
    role: Literal["tool"]
    content: Content
    tool_call_id: Id = Field(description="The id of the assistant's tool call this answers.")
    tool_calls: NoToolCalls = None


MessageIn = Annotated[
    SystemMessageIn | UserMessageIn | AssistantMessageIn | ToolMessageIn,
    Field(discriminator="role"),
]


class UsageIn(BaseModel):
    prompt_tokens: Annotated[int, Field(ge=0, le=MAX_TOKENS), Integral] | None = None
    completion_tokens: Annotated[int, Field(ge=0, le=MAX_TOKENS), Integral] | None = None
    total_tokens: Annotated[int, Field(ge=0, le=MAX_TOKENS), Integral] | None = None
    input_tokens: Annotated[int, Field(ge=0, le=MAX_TOKENS), Integral] | None = None
    output_tokens: Annotated[int, Field(ge=0, le=MAX_TOKENS), Integral] | None = None
    model_config = ConfigDict(extra="allow", strict=True)


class AppendIn(StorableBody, BaseModel):
    messages: Annotated[list[MessageIn], Field(min_length=1, max_length=MAX_BATCH)] = Field(
        description="In order. A tool result must answer an unanswered call of the assistant "
        "message before it (in this batch or the live context): otherwise 409."
    )
    usage: UsageIn | None = Field(None, description="Usage the model reported for the last call.")
    sequence: Annotated[int, Field(ge=0, le=MAX_TOKENS), Integral] | None = Field(
        None,
        description="Exactly-once, in order: the index of this batch's first message in the "
        "client's own count of the messages it sent to this session (0 for the first). Messages "
        "already stored are skipped (`duplicates`); a sequence past `next_sequence` is 409 "
        "with `expected_sequence`, nothing stored.",
    )
    defer: bool = Field(
        False,
        description="The client runs the compression the threshold check decides: it is "
        'answered as action "due" (POST /compress with "automatic": true runs it) instead '
        "of being queued. The hard message limit is queued all the same.",
    )
    model_config = STRICT_BODY


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
    pinned: bool
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
            "pinned": message.pinned,
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
    messages: list[MessageOut] = Field(description="The rows this request stored, in order.")
    decisions: list[Decision] = Field(
        description="What each automatic trigger decided after this write (fire, skip and why)."
    )
    next_sequence: int = Field(description="The sequence the client's next batch starts at.")
    duplicates: int = Field(
        0, description="Messages of this batch stored by an earlier request (not stored again)."
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


class RollbackIn(StorableBody, Schema):
    count: Annotated[int, Field(ge=1, le=10_000), Integral] = 1
    mode: Literal["undo", "regenerate"] = "undo"
    model_config = STRICT_BODY


class RollbackOut(Schema):
    session: SessionOut
    rolled_back: list[MessageOut]


class ResetIn(StorableBody, Schema):
    keep_system_prompt: bool = True
    model_config = STRICT_BODY


class ResetOut(Schema):
    session: SessionOut
    archived: int


class ErrorOut(Schema):
    detail: str


class SequenceErrorOut(ErrorOut):
    expected_sequence: int | None = Field(
        None, description="With a sequence gap: the sequence to send again from."
    )
    next_sequence: int | None = None


# Every status a route can answer besides its successes: 400 a body that is not JSON, 401 no or
# a bad key, 404 not this channel's (or no such) session, 409 the session's state forbids it,
# 413 a body or message over its limit, 422 a request that breaks a rule, 503 the database busy.
ERRORS = {
    400: ErrorOut,
    401: ErrorOut,
    403: ErrorOut,
    404: ErrorOut,
    409: ErrorOut,
    413: ErrorOut,
    415: ErrorOut,  # a body that is not JSON (core.middleware.ApiBodyLimit)
    422: ErrorOut,
    503: ErrorOut,
}


def only_declared(request: Any, query: type[BaseModel]) -> None:
    """Refuse query parameters a route does not take, and any given twice (django-ninja drops
    the first silently, so a misspelt ``limt=5`` would quietly mean the default)."""
    from sessions_app.services import InvalidInput

    known = {field.alias or name for name, field in query.model_fields.items()}
    unknown = sorted(set(request.GET) - known)
    if unknown:
        shown = ", ".join(repr(name) for name in unknown[:5])
        raise InvalidInput(
            f"Unknown query parameter(s) {shown}; this route takes {', '.join(sorted(known))}."
        )
    repeated = sorted(name for name in request.GET if len(request.GET.getlist(name)) > 1)
    if repeated:
        raise InvalidInput(f"Query parameter(s) {', '.join(repeated)} given more than once.")
