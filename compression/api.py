"""Gateway endpoints of the compression engine."""

from __future__ import annotations

from typing import Annotated, Any

from ninja import Router, Schema, Status
from pydantic import ConfigDict, Field

from compression.api_events import ScoreOut
from compression.engine.prompt import MEMORY_CONTEXT_MAX_CHARS
from compression.models import CompressionEvent
from compression.policy import waiting
from compression.policy.recovery import ModelError, enqueue_error, error_attempts, recover
from compression.policy.triggers import Decision, enqueue_manual, enqueue_requested
from core.bodies import StorableBody
from sessions_app.api.auth import OPERATE, WRITE, ChannelRequest
from sessions_app.api.schemas import ERRORS as STORE_ERRORS
from sessions_app.api.schemas import ErrorOut, Integral, SessionOut
from sessions_app.selectors import live_context
from sessions_app.selectors.context import external_context
from sessions_app.services import (
    InvalidInput,
    StateConflict,
    get_session_for_channel,
)
from sessions_app.services.validation import check_text

router = Router(tags=["compression"])
ERRORS = {**STORE_ERRORS, 501: ErrorOut}


class CompressIn(StorableBody, Schema):
    # Defaults by name (default=...): a type checker sees no positional one, and the route
    # builds CompressIn() when the request has no body.
    around_position: Annotated[int, Field(ge=0, le=2**31), Integral] | None = Field(
        default=None,
        description="Compress only near this message position (local compression). A position "
        "the session has no message at answers 404.",
    )
    focus: Annotated[str, Field(max_length=500)] | None = Field(
        default=None, description="A topic the summary should keep in most detail."
    )
    confirm: bool = Field(
        default=False,
        description="Compress even if a pre-compact hook fails (with "
        "`compression.checkpoint_required`, a failed checkpoint otherwise answers 409).",
    )
    wait: bool = Field(default=True, description="Wait for the result (up to wait_seconds).")
    wait_seconds: Annotated[float, Field(ge=0, le=900)] = 120
    automatic: bool = Field(
        default=False,
        description="Run the compression the service's own trigger would (the one an append "
        'with "defer" answered as due): the threshold is checked again and the guards apply '
        "(cooldown, anti-thrash, compression.enabled). Takes no focus, around_position or "
        "confirm.",
    )
    memory_context: Annotated[str, Field(max_length=MEMORY_CONTEXT_MAX_CHARS)] | None = Field(
        default=None,
        description="Text from the client's memory providers: the summariser reads it after "
        "the transcript, as reference material (not instructions).",
    )
    return_context: bool = Field(
        default=False,
        description="Also answer the live context afterwards (`context`, as GET "
        "/sessions/{id}/context answers its `messages`): a client that waits on the "
        "compression needs no second round trip.",
    )
    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        # The schema states the rule the endpoint enforces: an automatic compression takes no
        # focus, around_position or confirm (JSON Schema if/then, OpenAPI 3.1).
        json_schema_extra={
            "if": {"properties": {"automatic": {"const": True}}, "required": ["automatic"]},
            "then": {
                "properties": {
                    "focus": {"type": "null"},
                    "around_position": {"type": "null"},
                    "confirm": {"const": False},
                }
            },
        },
    )


class PassOut(ScoreOut):
    outcome: str
    event_id: int
    tokens_before: int | None
    tokens_after: int | None
    rows_archived: int
    summary_message_id: int | None
    reason: str
    error: str


class CompressOut(Schema):
    session_id: str
    outcome: str = Field(
        description="compressed, fallback, skipped, failed, running or queued; automatic "
        "compressions also ineffective or locked"
    )
    trigger: str | None = Field(None, description="automatic: the trigger it ran as.")
    reason: str | None = Field(
        None, description="automatic: why it compressed or not (a guard's reason when locked)."
    )
    task_id: str | None = None
    passes: list[PassOut] = []
    continued_in: str | None = None
    needs_confirmation: bool = False
    live_tokens: int | None = None
    live_messages: int | None = None
    notice: str | None = Field(
        None, description="With compression.progress_notices: the notice row's text for the user."
    )
    error: str | None = None
    session: SessionOut | None = Field(
        None,
        description="The session as it is after the compression (the continuation, when it "
        "went on in a new one): counters, guard, usage.",
    )
    context: list[dict[str, Any]] | None = Field(
        None, description="With return_context: the session's live context, OpenAI messages."
    )


@router.post(
    "/sessions/{session_id}/compress",
    response={200: CompressOut, 202: CompressOut, **ERRORS},
    auth=OPERATE,
)
def compress(request: ChannelRequest, session_id: str, payload: CompressIn | None = None):
    """Manual compression, run by the background worker (bypasses cooldown and anti-thrash);
    with `automatic`, the service's own automatic compression instead (guards apply).

    With `wait` (the default) the answer is the result; if the worker takes longer than
    `wait_seconds`, 202 with the task id (the result also lands in the session's events).
    A compression already running for this session answers 409 and starts nothing. With
    `compression.checkpoint_required`, a pre-compact hook that fails stops the compression
    (nothing changed) and answers 409 asking for `"confirm": true`."""
    payload = payload or CompressIn()
    session = get_session_for_channel(request.auth, session_id)
    if payload.automatic:
        # Each by what "not given" is for it: `around_position: 0` is given (0 == False).
        given = [
            name
            for name, value in (
                ("focus", payload.focus),
                ("around_position", payload.around_position),
                ("confirm", payload.confirm or None),
            )
            if value is not None
        ]
        if given:
            raise InvalidInput(
                f"An automatic compression takes no {', '.join(given)}: it runs as the "
                "service's own trigger would. Leave out 'automatic' to compress by hand."
            )
    if payload.memory_context is not None:
        check_text(payload.memory_context, "memory_context")
    waiting.refuse_while_running(session)
    if payload.automatic:
        task_id = enqueue_requested(session, payload.memory_context)
    else:
        task_id = enqueue_manual(
            session,
            CompressionEvent.Trigger.MANUAL_API,
            payload.focus,
            payload.around_position,
            payload.confirm,
            payload.memory_context,
        )
    body = waiting.manual_result(task_id, session, payload.wait_seconds if payload.wait else None)
    if body is None:
        return Status(
            202,
            {
                "session_id": str(session.pk),
                "outcome": "queued",
                "task_id": task_id,
                "session": SessionOut.of(session),
            },
        )
    # The conversation goes on in the continuation when the compression made one.
    after = get_session_for_channel(request.auth, body.get("continued_in") or session_id)
    body["session"] = SessionOut.of(after)
    if payload.return_context:
        body["context"] = live_context(after)
    return Status(200, body)


class CodexNotificationsIn(StorableBody, Schema):
    notifications: Annotated[list[dict[str, Any]], Field(min_length=1, max_length=1_000)] = Field(
        description="Notifications the gateway received from the Codex app server, as sent "
        '(`{"method": "item/completed", "params": {...}}`); others are ignored.'
    )
    model_config = ConfigDict(extra="forbid", strict=True)


class CodexNotificationsOut(Schema):
    recorded: int = Field(description="Compactions recorded now (each is recorded only once).")
    compressions: int


@router.post(
    "/sessions/{session_id}/codex/notifications",
    response={200: CodexNotificationsOut, **ERRORS},
    auth=WRITE,
)
def codex_notifications(request: ChannelRequest, session_id: str, payload: CodexNotificationsIn):
    """For sessions opened with `codex_thread_id` (T7a, native mode): forward the app server's
    notifications; a `contextCompaction` item (or the older `thread/compacted`) is recorded as a
    compression event, so the session's history says when Codex compacted its own thread."""
    from compression.paths import codex

    session = get_session_for_channel(request.auth, session_id)
    if external_context(session) != "codex":
        raise StateConflict(
            "This session was not opened with a codex_thread_id; it has no Codex thread."
        )
    check_text(payload.notifications, "notifications")
    recorded = codex.record_notifications(session, payload.notifications)
    session.refresh_from_db()
    return {"recorded": recorded, "compressions": session.compressions}


class ModelErrorIn(StorableBody, Schema):
    status: Annotated[int, Field(ge=100, le=599), Integral] | None = Field(
        description="The HTTP status the model answered the gateway's call (null: an error "
        "without one, such as one inside a stream)."
    )
    message: Annotated[str, Field(max_length=20_000)] = Field(
        description="The error's message, as the model's API gave it."
    )
    code: Annotated[str, Field(max_length=200)] | None = Field(
        None, description="The API's error code (`context_length_exceeded`...), if any."
    )
    type: Annotated[str, Field(max_length=200)] | None = Field(
        None, description="The API's error type (`invalid_request_error`...), if any."
    )
    wait: bool = Field(True, description="Wait for the compression (up to wait_seconds).")
    wait_seconds: Annotated[float, Field(ge=0, le=900)] = 120
    model_config = ConfigDict(extra="forbid", strict=True)


class ModelErrorOut(Schema):
    kind: str | None = Field(
        description="What the error means: context_overflow, payload_too_large, "
        "long_context_rate_limit, output_too_large, or null (nothing compression can help)."
    )
    action: str = Field(
        description="compressed, fallback, ineffective, skipped, failed, locked (the master "
        "switch), running (another compression holds the session), queued (still in the "
        "worker after wait_seconds), none (nothing to do) or reset (compression was exhausted: "
        "the session went back to its last good summary)"
    )
    reason: str
    session: SessionOut = Field(
        description="The session after it (with in_place: false, the continuation)."
    )
    context_window: int = Field(description="Tokens; lowered to 200,000 by a long-context 429.")
    archived: int | None = Field(None, description="reset: the rows the reset archived.")
    compression: CompressOut | None = Field(
        None, description="The compression's result, as POST /compress answers it."
    )


@router.post(
    "/sessions/{session_id}/model_error",
    response={200: ModelErrorOut, 202: ModelErrorOut, **ERRORS},
    auth=WRITE,
)
def model_error(request: ChannelRequest, session_id: str, payload: ModelErrorIn):
    """A gateway that calls the model itself reports what the model answered instead of a
    reply; the service does what `/turn` does with it (SPEC T4, F3). An error that means "too
    big" compresses at once, ignoring the cooldown (a long-context 429 also lowers the window
    to 200,000); exhausted compression resets the session to its last good summary; any other
    error compresses nothing. 202 when the compression is still running in the worker."""
    session = get_session_for_channel(request.auth, session_id)
    for name in ("message", "code", "type"):
        check_text(getattr(payload, name), name)
    error = ModelError(payload.status, payload.message, payload.code, payload.type)
    ran: dict[str, Any] = {}

    def in_worker(session: Any, attempt: int) -> Decision:
        task_id = enqueue_error(session, attempt)
        body = waiting.result_of(task_id, session, payload.wait_seconds if payload.wait else None)
        if body is None:
            ran["queued"] = task_id
            return Decision(
                CompressionEvent.Trigger.ERROR,
                "queued",
                f"the compression runs in the worker (task {task_id}); its result lands in "
                "the session's events",
            )
        ran["body"] = body
        return Decision(
            CompressionEvent.Trigger.ERROR,
            body.get("outcome", "failed"),
            body.get("reason") or body.get("error") or "",
        )

    recovered = recover(session, error, attempt=error_attempts(session), compressor=in_worker)
    decision = recovered.decision
    if decision is None:  # recover() decides something for every error it is given
        raise RuntimeError("recover() made no decision for a model error")
    body = ran.get("body")
    if body and body.get("continued_in"):
        session = get_session_for_channel(request.auth, body["continued_in"])
    session.refresh_from_db()
    answer = {
        "kind": recovered.kind,
        "action": "reset" if recovered.archived is not None else decision.action,
        "reason": decision.reason,
        "session": SessionOut.of(session),
        "context_window": session.context_window,
        "archived": recovered.archived,
        "compression": body,
    }
    return Status(202 if "queued" in ran else 200, answer)
