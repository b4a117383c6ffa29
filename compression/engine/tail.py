"""How long the protected tail is: the seed's message count, or Hermes Agent's ``lean`` budget.

``tail_mode: legacy`` (the default here) keeps the last ``protect_last_n`` messages. ``lean``
keeps the newest whole messages that fit a token budget of 2.5% of the session's context window,
clamped to [10,000, 25,000] tokens and never more than 20% of the window (Hermes's
``LEAN_TAIL_FLOOR_TOKENS``, ``LEAN_TAIL_CAP_TOKENS``, ``TAIL_MAX_CONTEXT_FRACTION``). Both modes
keep tool groups whole and at least ``min_tail_user_messages`` real user messages. Compression,
micro-compaction and pruning all read the tail from here, so "the tail" is one thing.
"""

from __future__ import annotations

from compression.engine.selection import Selection, select
from core.config import CompressionConfig
from sessions_app.models import Message

LEAN_SHARE = 0.025
LEAN_FLOOR_TOKENS = 10_000
LEAN_CAP_TOKENS = 25_000
TAIL_MAX_WINDOW_SHARE = 0.20
TAIL_FLOOR = 8  # messages a deeper pass never cuts the protected tail below


def tail_length(protect_last_n: int, attempt: int) -> int:
    """Pass ``attempt``'s protected tail: halved each pass, not below ``TAIL_FLOOR`` (or less)."""
    return max(min(TAIL_FLOOR, protect_last_n), protect_last_n >> attempt)


def lean_budget(context_window: int, attempt: int = 0) -> int:
    """Hermes's lean tail budget, ``int()``-truncated as Hermes computes it; a deeper pass
    halves it (as the message mode halves ``protect_last_n``)."""
    budget = max(LEAN_FLOOR_TOKENS, min(LEAN_CAP_TOKENS, int(context_window * LEAN_SHARE)))
    if context_window > 0:
        budget = min(budget, int(context_window * TAIL_MAX_WINDOW_SHARE))
    return max(1, budget >> attempt)


def select_live(
    live: list[Message],
    config: CompressionConfig,
    context_window: int,
    attempt: int = 0,
    max_tail: int | None = None,
) -> Selection:
    """Head, middle and tail of ``live`` under the configured tail mode, for pass ``attempt``
    (``max_tail``: at most that many messages of tail, see ``selection.select``)."""
    users = config.min_tail_user_messages
    if attempt:
        users = max(1, users)  # deeper passes keep the latest intent whatever the setting says
    return select(
        live,
        protect_first_n=config.protect_first_n,
        protect_last_n=tail_length(config.protect_last_n, attempt),
        min_tail_user_messages=users,
        tail_budget_tokens=lean_budget(context_window, attempt)
        if config.tail_mode == "lean"
        else None,
        max_tail=max_tail,
    )
