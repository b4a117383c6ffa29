"""Which live rows are kept verbatim and which are compressed (SPEC C1, C2, C4, C5).

head = the system prompt + the first ``protect_first_n`` messages; tail = the last
``protect_last_n`` messages (or, with a token budget, Hermes's lean walk: see ``_lean_start``)
holding at least ``min_tail_user_messages`` real user messages; middle = the rest. Cuts never
fall between an assistant's tool calls and their results. Summaries already in the middle are the
previous summary of an iterative update, not chat to summarise. Pinned rows, with their whole
tool-call group, are taken out of the middle: they stay live, in their place, whatever is
summarised around them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sessions_app.models import Message


@dataclass
class Selection:
    head: list[Message]
    middle: list[Message]
    tail: list[Message]
    previous_summaries: list[Message] = field(default_factory=list)
    # Rows between head and tail kept live because they (or their tool-call group) are pinned.
    pinned: list[Message] = field(default_factory=list)

    @property
    def chat(self) -> list[Message]:
        """The middle's rows that are conversation (not earlier summaries)."""
        return [m for m in self.middle if not m.is_summary]

    @property
    def middle_tokens(self) -> int:
        return sum(m.token_count for m in self.middle)


def _is_real_user(message: Message) -> bool:
    return message.role == Message.Role.USER and not message.is_summary


def _align_head_end(rows: list[Message], end: int) -> int:
    """Grow the head so it does not end between a tool call and its results."""
    while end < len(rows) and rows[end].role == Message.Role.TOOL:
        end += 1
    return end


def _align_tail_start(rows: list[Message], start: int) -> int:
    """Move the tail's first row back so a tool result never starts it without its call."""
    while 0 < start < len(rows) and rows[start].role == Message.Role.TOOL:
        start -= 1
    return start


def _groups(rows: list[Message]) -> list[list[Message]]:
    """Rows as the units a cut keeps whole: an assistant's tool calls with their results."""
    groups: list[list[Message]] = []
    for row in rows:
        if row.role == Message.Role.TOOL and groups and _calls(groups[-1][0]):
            groups[-1].append(row)
        else:
            groups.append([row])
    return groups


def _calls(row: Message) -> bool:
    return row.role == Message.Role.ASSISTANT and bool(row.tool_calls)


def unpin(selection: Selection) -> Selection:
    """The selection with pinned rows' groups moved out of the middle into ``pinned``."""
    if not any(m.pinned for m in selection.middle):
        return selection
    middle: list[Message] = []
    pinned: list[Message] = []
    for group in _groups(selection.middle):
        (pinned if any(m.pinned for m in group) else middle).extend(group)
    return Selection(
        head=selection.head,
        middle=middle,
        tail=selection.tail,
        previous_summaries=[m for m in middle if m.is_summary],
        pinned=pinned,
    )


LEAN_MESSAGE_FLOOR = 8  # Hermes's _MAX_TAIL_MESSAGE_FLOOR
LEAN_SOFT_CEILING = 1.5  # the walk may overrun the budget by half before it stops


def _walk(rows: list[Message], head_end: int, limit: int, floor: int) -> int:
    """Start of the newest run of rows whose tokens stay within ``limit`` (at least ``floor``)."""
    n, total, start = len(rows), 0, len(rows)
    for i in range(n - 1, head_end - 1, -1):
        if total + rows[i].token_count > limit and n - i >= floor:
            break
        total += rows[i].token_count
        start = i
    return start


def _lean_start(rows: list[Message], head_end: int, budget: int, protect_last_n: int) -> int:
    """Hermes's token-budget tail walk (context_compressor._find_tail_cut_by_tokens): whole
    messages from the end while they fit 1.5x the budget, keeping at least
    max(3, min(protect_last_n, 8)) messages -- fewer in a short session, so that some are left
    to summarise; when everything after the head fits, walk again with the plain budget so
    there is still a middle."""
    available = len(rows) - head_end - 1
    floor = (
        min(max(3, min(protect_last_n, LEAN_MESSAGE_FLOOR)), max(3, available - 2), available)
        if available > 1
        else 0
    )
    start = _walk(rows, head_end, int(budget * LEAN_SOFT_CEILING), floor)
    if start <= head_end:
        start = _walk(rows, head_end, budget, floor)
    return min(start, len(rows) - floor)


def select(
    live: list[Message],
    *,
    protect_first_n: int,
    protect_last_n: int,
    min_tail_user_messages: int,
    tail_budget_tokens: int | None = None,
    max_tail: int | None = None,
) -> Selection:
    """``tail_budget_tokens`` None: the tail is the last ``protect_last_n`` messages (the
    seed); else Hermes's lean tail for that many tokens. Either way grown back to whole tool
    groups and to ``min_tail_user_messages`` real user messages -- unless that would make it
    longer than ``max_tail`` messages (the hard message limit's compression: an agent's run of
    thousands of tool calls after one user message would otherwise all be tail, and nothing
    could ever bring the session under the limit); the user's message is then summarised."""
    rows = list(live)
    head_end = 0
    if rows and rows[0].role == Message.Role.SYSTEM and not rows[0].is_summary:
        head_end = 1
    # Earlier summaries are never part of the head: they are what gets updated.
    taken = 0
    while head_end < len(rows) and taken < protect_first_n and not rows[head_end].is_summary:
        head_end += 1
        taken += 1
    head_end = _align_head_end(rows, head_end)
    # An OpenAI server compaction item stands for everything before it and cannot be summarised
    # (it is encrypted): it and what precedes it stay in the head.
    anchors = [i for i, m in enumerate(rows) if m.provider_item is not None]
    if anchors and anchors[-1] >= head_end:
        head_end = _align_head_end(rows, anchors[-1] + 1)

    if tail_budget_tokens is None:
        tail_start = max(head_end, len(rows) - protect_last_n)
    else:
        tail_start = max(head_end, _lean_start(rows, head_end, tail_budget_tokens, protect_last_n))
    seed = tail_start
    users = sum(1 for m in rows[tail_start:] if _is_real_user(m))
    # Grow back to the real user messages there are after the head, no further: in an agent's
    # run of tool calls the only user message is often in the head, and walking back to the
    # head for it would leave nothing ever to compress.
    wanted = min(
        min_tail_user_messages,
        users + sum(1 for m in rows[head_end:tail_start] if _is_real_user(m)),
    )
    while users < wanted and tail_start > head_end:
        tail_start -= 1
        if _is_real_user(rows[tail_start]):
            users += 1
    tail_start = max(head_end, _align_tail_start(rows, tail_start))
    if max_tail is not None and len(rows) - tail_start > max_tail:
        tail_start = max(head_end, seed, len(rows) - max_tail)
        tail_start = max(head_end, _align_tail_start(rows, tail_start))

    middle = rows[head_end:tail_start]
    return unpin(
        Selection(
            head=rows[:head_end],
            middle=middle,
            tail=rows[tail_start:],
            previous_summaries=[m for m in middle if m.is_summary],
        )
    )


def select_around(
    live: list[Message], position: int, radius: int, head_len: int, tail_start: int
) -> Selection:
    """Local compression: only the live rows within ``radius`` of ``position``, never the head
    nor the tail a full compression would protect (so an unanswered tool call at the end, or
    the latest user message, is never archived), aligned to whole tool-call groups."""
    rows = list(live)
    index = next((i for i, m in enumerate(rows) if m.position >= position), len(rows) - 1)
    start = max(head_len, index - radius)
    end = min(tail_start, index + radius + 1)
    start = max(head_len, _align_tail_start(rows, start))
    end = _align_tail_start(rows, end) if end < len(rows) else end
    if end <= start:
        start = end = max(head_len, min(start, tail_start))
    return unpin(
        Selection(
            head=rows[:start],
            middle=rows[start:end],
            tail=rows[end:],
            previous_summaries=[m for m in rows[start:end] if m.is_summary],
        )
    )


def orphans(messages: list[dict]) -> list[str]:
    """Problems that would make a chat API refuse the context: tool results without their call
    just before them, and calls without every result (SPEC C5). Empty when valid."""
    problems = []
    pending: set[str] = set()
    for n, message in enumerate(messages):
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            if call_id in pending:
                pending.discard(call_id)
            else:
                problems.append(f"message {n}: tool result {call_id!r} has no call before it")
            continue
        if pending:
            problems.append(f"message {n}: calls {sorted(pending)} have no results")
        pending = {c["id"] for c in message.get("tool_calls") or ()}
    if pending:
        problems.append(f"end: calls {sorted(pending)} have no results")
    return problems
