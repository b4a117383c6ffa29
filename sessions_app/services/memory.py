"""Memory blocks: text the model always sees, after the system prompt, whatever was compressed.

A block belongs to a channel (every session of it sees the block) or to one session; a session's
block replaces its channel's block of the same label. Blocks are not rows: no compression,
micro-compaction or pruning reads them. They count in each session's ``live_tokens`` (estimated
with one encoding for every model, since a channel's block serves sessions of many models), so
the threshold sees what the model is sent and a compression makes room around them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import F, Q, Sum

from core.config import get_config
from sessions_app.models import Channel, MemoryBlock, Message, Session
from sessions_app.services.errors import InvalidInput, NotFound, StateConflict
from sessions_app.services.validation import check_text
from sessions_app.tokens import counter_for

LABEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$"
LABEL = re.compile(LABEL_PATTERN)
# The words that open the memory section of the system context.
HEADING = "Memory (kept across every compression of this conversation):"


def render(block: MemoryBlock | tuple[str, str]) -> str:
    label, text = (block.label, block.text) if isinstance(block, MemoryBlock) else block
    return f"<{label}>\n{text}\n</{label}>"


def block_tokens(label: str, text: str) -> int:
    return counter_for("").count_text(render((label, text)))


def blocks_for(session: Session) -> list[MemoryBlock]:
    """The blocks the session's context carries, by label; a session block hides its channel's
    block of the same label."""
    blocks = MemoryBlock.objects.filter(
        Q(session=session) | Q(channel_id=session.channel_id, session__isnull=True)
    )
    chosen: dict[str, MemoryBlock] = {}
    for block in blocks:
        if block.label not in chosen or block.session_id is not None:
            chosen[block.label] = block
    return [chosen[label] for label in sorted(chosen)]


def memory_tokens(session: Session) -> int:
    """What the session's blocks add to its live tokens."""
    return sum(block.token_count for block in blocks_for(session))


def memory_section(session: Session) -> str:
    """The blocks as the text placed after the system prompt ('' without blocks)."""
    blocks = blocks_for(session)
    if not blocks:
        return ""
    return "\n\n".join([HEADING, *(render(b) for b in blocks)])


def with_memory(session: Session, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The live context with the memory section in its system context: appended to the system
    prompt, so a provider that takes one system message takes it, or as a system message of
    its own at the start where the session has no system prompt."""
    section = memory_section(session)
    if not section:
        return messages
    if messages and messages[0].get("role") == Message.Role.SYSTEM:
        first = dict(messages[0])
        content = first.get("content")
        if isinstance(content, list):
            first["content"] = [*content, {"type": "text", "text": section}]
        else:
            first["content"] = f"{content}\n\n{section}" if content else section
        return [first, *messages[1:]]
    return [{"role": Message.Role.SYSTEM, "content": section}, *messages]


@dataclass(frozen=True)
class Owner:
    """Whose blocks: a channel's (all its sessions) or one session's."""

    channel: Channel | None = None
    session: Session | None = None

    def blocks(self):
        if self.session is not None:
            return MemoryBlock.objects.filter(session=self.session)
        return MemoryBlock.objects.filter(channel=self.channel, session__isnull=True)

    def lock(self) -> None:
        """Serialise every block edit of a channel (its own blocks and its sessions'): two
        writers of one label would otherwise both insert (one failing on the unique label), and
        a channel edit and a session edit of the same label would each shift the counters from
        what the other had not yet written."""
        if self.session is not None:
            channel_id = self.session.channel_id
        elif self.channel is not None:
            channel_id = self.channel.pk
        else:
            raise ValueError("an Owner is a channel or a session")
        Channel.objects.select_for_update().filter(pk=channel_id).first()

    def affected(self):
        """The sessions whose context a change of this owner's blocks changes."""
        if self.session is not None:
            return Session.objects.filter(pk=self.session.pk)
        return Session.objects.filter(channel=self.channel)


def check_block(label: str, text: str) -> None:
    """Raise InvalidInput naming what is wrong with this label or text."""
    if not LABEL.match(label or ""):
        raise InvalidInput(
            f"label {label[:40]!r} is not usable: 1-100 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit."
        )
    if not isinstance(text, str):
        raise InvalidInput("text must be a string.")
    limit = get_config().memory_blocks.block_max_chars
    if len(text) > limit:
        raise InvalidInput(
            f"text is {len(text):,} characters; a memory block holds at most {limit:,} "
            "(memory_blocks.block_max_chars). Shorten it or split it into blocks."
        )
    check_text({"label": label, "text": text}, "memory block")


def _shift(owner: Owner, label: str, before: int, after: int) -> None:
    """Move the live tokens of every session whose visible block ``label`` changed, by the
    difference. ``before``/``after``: the owner's block's tokens, 0 where it is absent."""
    if owner.session is None:
        # Sessions with a block of their own under this label do not see the channel's.
        hidden = MemoryBlock.objects.filter(
            label=label, session__isnull=False, session__channel=owner.channel
        ).values("session_id")
        if after != before:
            owner.affected().exclude(pk__in=hidden).update(
                live_tokens=F("live_tokens") + (after - before)
            )
        return
    # Where the session's block is absent, the channel's block of that label shows instead.
    shadowed = (
        MemoryBlock.objects.filter(
            channel_id=owner.session.channel_id, session__isnull=True, label=label
        )
        .values_list("token_count", flat=True)
        .first()
    ) or 0
    delta = (after or shadowed) - (before or shadowed)
    if delta:
        owner.affected().update(live_tokens=F("live_tokens") + delta)


@transaction.atomic
def set_block(owner: Owner, label: str, text: str) -> tuple[MemoryBlock, bool]:
    """Create or replace the owner's block ``label``; the sessions that see it move their live
    tokens by the difference in the same transaction. Returns (block, created)."""
    check_block(label, text)
    owner.lock()
    existing = owner.blocks().filter(label=label).first()
    tokens = block_tokens(label, text)
    if existing is None:
        limit = get_config().memory_blocks.max_blocks
        if owner.blocks().count() >= limit:
            # The request is valid; the owner's state refuses it (another time it would pass).
            raise StateConflict(
                f"this {'session' if owner.session else 'channel'} has {limit} memory blocks "
                "already (memory_blocks.max_blocks); delete one or write into an existing block."
            )
        block = MemoryBlock.objects.create(
            channel=None if owner.session else owner.channel,
            session=owner.session,
            label=label,
            text=text,
            token_count=tokens,
        )
        _shift(owner, label, 0, tokens)
        return block, True
    _shift(owner, label, existing.token_count, tokens)
    existing.text, existing.token_count = text, tokens
    existing.save(update_fields=["text", "token_count", "updated_at"])
    return existing, False


@transaction.atomic
def delete_block(owner: Owner, label: str) -> None:
    owner.lock()
    block = owner.blocks().filter(label=label).first()
    if block is None:
        raise NotFound(f"No memory block {label!r} here.")
    _shift(owner, label, block.token_count, 0)
    block.delete()


def channel_memory_tokens(channel: Channel) -> int:
    """What the channel's blocks add to a new session of it (no session blocks yet)."""
    total = MemoryBlock.objects.filter(channel=channel, session__isnull=True).aggregate(
        n=Sum("token_count")
    )["n"]
    return total or 0
