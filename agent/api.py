"""The agent's endpoints: a turn (``POST /sessions/{id}/turn``, streamed or not) and the
``session_search`` tool for gateways that run their own model loop."""

from __future__ import annotations

from typing import Annotated, Any

from ninja import Body, Router, Schema
from pydantic import ConfigDict, Field

from agent import recall
from agent.stream import streamed_turn
from agent.turn import TurnResult, run_turn
from compression.api import ERRORS, CompressOut
from compression.tasks import result_dict
from core.bodies import StorableBody
from sessions_app.api.auth import READ, WRITE, ChannelRequest
from sessions_app.api.schemas import ErrorOut, MessageOut, SessionOut
from sessions_app.services import get_session_for_channel

router = Router(tags=["agent"])


class TurnIn(StorableBody, Schema):
    content: Annotated[str, Field(min_length=1)]
    name: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    stream: bool = Field(
        default=False,
        description="Answer with server-sent events: `delta` (the model's text as it is "
        "written), `tool` (each session_search call), then `done` (this operation's JSON "
        "answer) or `error` (`detail`, `status`).",
    )
    model_config = ConfigDict(extra="forbid", strict=True)


class DecisionOut(Schema):
    trigger: str
    action: str
    reason: str


class TurnOut(Schema):
    session: SessionOut
    reply: MessageOut | None = Field(description="The model's reply as stored; null for /compress.")
    usage: dict[str, int] | None = None
    decisions: list[DecisionOut] = Field(
        description="What hygiene, preflight, error and post-call checks decided, in order."
    )
    command: CompressOut | None = Field(None, description="The result of /compress [focus].")


@router.post(
    "/sessions/{session_id}/turn",
    response={200: TurnOut, 502: ErrorOut, 503: ErrorOut, **ERRORS},
    # With "stream": true the same 200 is server-sent events (delta, tool, done, error).
    openapi_extra={
        "responses": {
            200: {
                "content": {
                    "text/event-stream": {
                        "schema": {  # one event (OpenAPI 3.1: the schema of each event)
                            "type": "object",
                            "required": ["event", "data"],
                            "properties": {
                                "event": {"enum": ["delta", "tool", "done", "error"]},
                                "data": {
                                    "type": "string",
                                    "contentMediaType": "application/json",
                                },
                            },
                        }
                    }
                }
            }
        }
    },
    auth=WRITE,
)
def turn(request: ChannelRequest, session_id: str, payload: TurnIn):
    """The gateway's inbound user message: hygiene, preflight, the chat model call, the reply and
    usage stored, the post-call check. `/compress [focus]` runs the manual command instead."""
    session = get_session_for_channel(request.auth, session_id)
    if payload.stream:
        return streamed_turn(
            session,
            payload.content,
            payload.name,
            lambda result: TurnOut.model_validate(_turn_out(result)).model_dump(mode="json"),
        )
    return _turn_out(run_turn(session, payload.content, payload.name))


def _turn_out(result: TurnResult) -> dict[str, Any]:
    return {
        "session": SessionOut.of(result.session),
        "reply": MessageOut.of(result.reply) if result.reply else None,
        "usage": result.usage,
        "decisions": [d.as_dict() for d in result.decisions],
        "command": result_dict(result.command) if result.command else None,
    }


class ToolsOut(Schema):
    tools: list[dict[str, Any]] = Field(
        description="The tools this service runs, in OpenAI's tool-calling format."
    )


class ToolCallOut(Schema):
    content: str = Field(description="The tool message's content to give the model (JSON text).")
    result: dict[str, Any] = Field(
        description="The same, parsed: hits or messages, or `error` when the arguments were "
        "refused (said so the model can correct itself)."
    )


@router.get("/tools", response={200: ToolsOut, **ERRORS}, auth=READ)
def tools(request: ChannelRequest):
    """The `session_search` tool's schema, for gateways that run their own model loop."""
    return {"tools": [recall.schema()]}


@router.post(
    "/sessions/{session_id}/tools/session_search",
    response={200: ToolCallOut, **ERRORS},
    auth=READ,
)
def session_search(
    request: ChannelRequest, session_id: str, arguments: Annotated[dict[str, Any], Body()]
):
    """Run one `session_search` call with the arguments the model sent (a JSON object): the
    answer to put in the tool message. Arguments the tool refuses are answered, not rejected."""
    session = get_session_for_channel(request.auth, session_id)
    result = recall.run(session, arguments)
    return {"content": recall.as_content(result), "result": result}
