"""Pins and memory blocks: what the model keeps seeing whatever is compressed."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Path, Router, Schema, Status
from pydantic import ConfigDict, Field

from core.bodies import StorableBody
from sessions_app import services
from sessions_app.api.auth import READ, WRITE, ChannelRequest
from sessions_app.api.schemas import ERRORS, MessageOut
from sessions_app.models import MemoryBlock, Session
from sessions_app.services.memory import LABEL_PATTERN, Owner, blocks_for, delete_block, set_block
from sessions_app.services.pins import set_pinned

router = Router(tags=["memory"])

Label = Annotated[str, Path(description="The block's name.", pattern=LABEL_PATTERN)]
Position = Annotated[int, Path(description="The message's position.", ge=0)]


class BlockIn(StorableBody, Schema):
    text: str = Field(description="The block's text (at most memory_blocks.block_max_chars).")
    model_config = ConfigDict(extra="forbid")


class BlockOut(Schema):
    label: str
    text: str
    scope: Literal["channel", "session"]
    token_count: int
    updated_at: datetime

    @staticmethod
    def of(block: MemoryBlock) -> dict[str, Any]:
        return {
            "label": block.label,
            "text": block.text,
            "scope": "session" if block.session_id else "channel",
            "token_count": block.token_count,
            "updated_at": block.updated_at,
        }


class MemoryOut(Schema):
    blocks: list[BlockOut]
    memory_tokens: int = Field(description="What the blocks add to the live tokens.")


def _session(request: ChannelRequest, session_id: str) -> Session:
    return services.get_session_for_channel(request.auth, session_id)


def _memory(blocks: list[MemoryBlock]) -> dict[str, Any]:
    return {
        "blocks": [BlockOut.of(b) for b in blocks],
        "memory_tokens": sum(b.token_count for b in blocks),
    }


@router.post(
    "/sessions/{session_id}/messages/{position}/pin",
    response={200: MessageOut, **ERRORS},
    auth=WRITE,
)
def pin(request: ChannelRequest, session_id: str, position: Position):
    """Pin a live message: it stays in the live context, in its place, across every
    compression, micro-compaction and pruning (with its tool call or results)."""
    return MessageOut.of(set_pinned(_session(request, session_id), position, True))


@router.delete(
    "/sessions/{session_id}/messages/{position}/pin",
    response={200: MessageOut, **ERRORS},
    auth=WRITE,
)
def unpin(request: ChannelRequest, session_id: str, position: Position):
    """Unpin: the next compression may summarise the message (the original is kept)."""
    return MessageOut.of(set_pinned(_session(request, session_id), position, False))


@router.get("/sessions/{session_id}/memory", response={200: MemoryOut, **ERRORS}, auth=READ)
def session_memory(request: ChannelRequest, session_id: str):
    """The blocks this session's context carries: the channel's, and the session's own (which
    replace the channel's of the same label)."""
    return _memory(blocks_for(_session(request, session_id)))


@router.put(
    "/sessions/{session_id}/memory/{label}",
    response={200: BlockOut, 201: BlockOut, **ERRORS},
    auth=WRITE,
)
def put_session_block(request: ChannelRequest, session_id: str, label: Label, payload: BlockIn):
    """Create or replace one of this session's blocks."""
    block, created = set_block(Owner(session=_session(request, session_id)), label, payload.text)
    return Status(201 if created else 200, BlockOut.of(block))


@router.delete("/sessions/{session_id}/memory/{label}", response={204: None, **ERRORS}, auth=WRITE)
def delete_session_block(request: ChannelRequest, session_id: str, label: Label):
    delete_block(Owner(session=_session(request, session_id)), label)
    return Status(204, None)


@router.get("/memory", response={200: MemoryOut, **ERRORS}, auth=READ)
def channel_memory(request: ChannelRequest):
    """The channel's blocks: every session of the channel carries them."""
    return _memory(list(Owner(channel=request.auth).blocks()))


@router.put("/memory/{label}", response={200: BlockOut, 201: BlockOut, **ERRORS}, auth=WRITE)
def put_channel_block(request: ChannelRequest, label: Label, payload: BlockIn):
    """Create or replace a channel block; every session of the channel sees it next request."""
    block, created = set_block(Owner(channel=request.auth), label, payload.text)
    return Status(201 if created else 200, BlockOut.of(block))


@router.delete("/memory/{label}", response={204: None, **ERRORS}, auth=WRITE)
def delete_channel_block(request: ChannelRequest, label: Label):
    delete_block(Owner(channel=request.auth), label)
    return Status(204, None)
