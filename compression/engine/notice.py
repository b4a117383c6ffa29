"""``compression.progress_notices``: after a compression run that wrote a summary (any trigger,
manual ones too), one notice row tells the channel's user what it covered and how to find the
originals again. The row is history, never context (sessions_app.services.notices)."""

from __future__ import annotations

import logging

from compression.models import CompressionEvent
from core.config import get_config
from sessions_app.models import Message, Session
from sessions_app.services.notices import add_notice

logger = logging.getLogger(__name__)


def notice_text(
    passes: list, trigger: str, *, continued: bool = False, tool: str = "session_search"
) -> str | None:
    """What the notice says about the run's ``passes`` (compress.PassResult), or None when
    none wrote a summary. ``continued`` (in_place: false): the positions are the earlier
    session's, which the new one's ``around`` cannot look up, so the notice names none."""
    written = [p for p in passes if p.outcome in CompressionEvent.WROTE and p.summary is not None]
    if not written:
        return None
    first = min(p.summary.covers_from_position for p in written)
    last = max(p.summary.covers_to_position for p in written)
    before, after = written[0].event.tokens_before, written[-1].event.tokens_after
    why = (
        CompressionEvent.Trigger(trigger).label if trigger in CompressionEvent.Trigger else trigger
    )
    # Written for the person in the chat, not for a developer: no API paths.
    span = (
        "the earlier part of this conversation is now a summary"
        if continued
        else f"messages #{first} to #{last} are now a summary"
    )
    where = "" if continued else f" ({tool}, around #{first})"
    return (
        f"Context compressed ({why}): {span}; the live context went from {before:,} to "
        f"{after:,} tokens. Nothing was deleted: ask for a detail from back then and the "
        f"assistant searches the originals{where}."
    )


def announce(
    session: Session, passes: list, trigger: str, continued_in: Session | None = None
) -> Message | None:
    """Write the notice when ``progress_notices`` is on, in the session the conversation goes
    on in; a failure here never fails the run (the compression is done)."""
    if not get_config().compression.progress_notices:
        return None
    text = notice_text(
        passes, trigger, continued=continued_in is not None, tool=session.recall_tool
    )
    if text is None:
        return None
    try:
        return add_notice(continued_in or session, text)
    except Exception:  # a lost notice is only logged
        logger.exception("progress notice for session %s not written", session.pk)
        return None
