"""OpenAI server-side compaction (SPEC T7b), opt-in per model family.

For a session whose model matches ``codex_responses_models`` while ``codex_responses_native`` is
on, the turn calls the Responses API with ``context_management=[{"type": "compaction",
"compact_threshold": N}]``: when the rendered context crosses N, the server compacts it and
returns an opaque ``compaction`` item (``encrypted_content``) before its reply. Our automatic
threshold is held above N (compression.policy.threshold), so the server compacts first and ours
is the safety net.

The item is stored as a summary row (``Message.provider_item``) that replaces the live rows
before it -- archived, never deleted, still searchable -- and is replayed to the server in its
place (OpenAI: "you can drop items that came before the most recent compaction item"). The
system prompt stays live and goes as ``instructions``.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from compression.events import record_written
from compression.models import CompressionEvent
from sessions_app import tokens
from sessions_app.models import Message, Session
from sessions_app.selectors.context import live_rows
from sessions_app.selectors.messages import rows_of
from sessions_app.selectors.sessions import lock_session
from sessions_app.services.archive import replace_with_summary, save_compressed

KEY = "openai_compaction"  # marks the item among to_responses_input's chat messages
PLACEHOLDER = (
    "[The conversation before this point was compacted by the OpenAI server; the model receives "
    "it as an encrypted compaction item. The original messages are archived and searchable.]"
)


def store_compaction(
    session: Session, item: dict[str, Any], threshold: int, sent: list[int]
) -> CompressionEvent:
    """The server compacted what it was sent (``sent``: those rows' ids): keep its item as the
    live context's summary and archive what it replaced -- the system prompt stays, and rows
    stored while the model was answering were not in the compaction and stay live."""
    content = PLACEHOLDER
    with transaction.atomic():
        locked = lock_session(session)
        wanted = set(sent)
        live = [m for m in live_rows(locked) if m.pk in wanted]
        replaced = [m for m in live if not (m.role == Message.Role.SYSTEM and not m.is_summary)]
        first = replaced[0] if replaced else (live[-1] if live else None)
        position = first.position if first is not None else locked.next_position
        summary_tokens = tokens.count_message({"role": "user", "content": content}, locked.model)
        tokens_before, messages_before = locked.live_tokens, locked.live_messages
        summary, archived = replace_with_summary(
            locked,
            rows_of(locked, [m.pk for m in replaced]),
            position=position,
            role=Message.Role.USER,
            content=content,
            token_count=summary_tokens,
            covers_from_position=replaced[0].position if replaced else None,
            covers_to_position=replaced[-1].position if replaced else None,
            provider_item=item,
        )
        save_compressed(locked)
        return record_written(
            locked,
            CompressionEvent.Trigger.SERVER,
            CompressionEvent.Outcome.COMPRESSED,
            f"the OpenAI server compacted the context at its threshold {threshold:,}",
            path=CompressionEvent.Path.OPENAI_SERVER,
            tokens_before=tokens_before,
            messages_before=messages_before,
            summary=summary,
            rows_archived=archived,
            threshold_tokens=threshold,
            summary_model="openai server",
        )
