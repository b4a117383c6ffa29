"""Summary provenance (S5) and Hermes's copies: what each summary replaced, and which row a
compaction's head or tail copy repeats. Hermes records neither; both are inferred here.

Inside one session a compaction marks every active row inactive (``compacted=1``; some builds
mark the originals of the tail it copies ``compacted=0``) and then inserts head copies, the
summary and tail copies as fresh rows. So the rows a summary replaced are the inactive rows
between the start of the previous generation's block and the start of its own; a block starts
at its head copies, found as the rows just before the summary that repeat the rows the previous
block opened with.

Hermes's copies are not verbatim: it writes them from the messages it replayed, and it replays a
user or assistant text as ``sanitize_context(text).strip()``; it prunes tool results over 200
characters in them (the protected head's included) and may shorten long tool-call arguments. A
copy is therefore recognised as Hermes writes it (:func:`repeats`): the same role, and the same
text as Hermes replays it, or for a tool result the same ``tool_call_id``, or for a tool call the
same call ids. Copies are paired with their originals row by row; a copy that does not repeat the
row it stands for is named in the import's report.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from hermes_import.format import (
    MERGED_PRIOR_CONTEXT_HEADER,
    MERGED_SUMMARY_DELIMITER,
    TOOL_CALL_REMOVED,
    is_pruned_tool_text,
    replay_text,
)
from hermes_import.mapping import (
    ARCHIVED,
    LIVE,
    ROLLED_BACK,
    Conversation,
    Planned,
    call_ids,
)

# Hermes keeps a handful of head messages (protect_first_n, 3 by default); looking further for
# head copies only costs time on long runs of repeated text.
MAX_HEAD = 64
# Hermes's tail is a token budget (a tenth to a fifth of its threshold) with a floor of a few
# messages; a tail longer than this is looked for no further.
MAX_TAIL = 2_000
# Of the rows a copy could repeat word for word ("ok", "Done."), the newest this many are tried.
MAX_CANDIDATES = 64


def _same(a: Planned, b: Planned) -> bool:
    return (a.role, a.text, a.parts, a.tool_calls, a.tool_call_id) == (
        b.role,
        b.text,
        b.parts,
        b.tool_calls,
        b.tool_call_id,
    )


def repeats(copy: Planned, original: Planned) -> bool:
    """Whether ``copy`` is ``original`` as Hermes writes a compaction's copy of it: a user or
    assistant text as Hermes replays it (``sanitize_context(text).strip()``), a tool result by
    its ``tool_call_id`` with the same text or one Hermes prunes to (a one-line summary, a
    placeholder), a tool call by its call ids (Hermes shortens long arguments, and strips calls
    whose results it dropped)."""
    if copy.role != original.role:
        return False
    if copy.role == "tool":
        return copy.tool_call_id == original.tool_call_id and (
            copy.text == original.text
            or is_pruned_tool_text(copy.text)
            or copy.parts is not None  # Hermes strips images from a copy's parts
        )
    if copy.key == original.key or _same(copy, original):
        return True
    if copy.role == "assistant" and original.tool_calls:
        kept = call_ids(copy.tool_calls)
        if not kept:  # every call stripped: Hermes leaves the text, or says so
            return replay_text(copy.text) in (TOOL_CALL_REMOVED, replay_text(original.text))
        return set(kept) < set(call_ids(original.tool_calls))
    return False


def _stamped(copy: Planned, original: Planned) -> bool:
    """Hermes keeps a replayed message's timestamp in its copy: the same role and timestamp
    place a copy even where its text changed in a way :func:`repeats` does not know."""
    return (
        copy.role == original.role
        and copy.timestamp is not None
        and copy.timestamp == original.timestamp
    )


def _carried_text(carrier: Planned) -> str | None:
    """The tail message inside a merged carrier (the part before the delimiter; the last one,
    since the message carried may itself be an earlier carrier)."""
    text = carrier.text or ""
    if MERGED_SUMMARY_DELIMITER not in text:
        return None
    before = text.rsplit(MERGED_SUMMARY_DELIMITER, 1)[0]
    if before.startswith(MERGED_PRIOR_CONTEXT_HEADER):
        before = before[len(MERGED_PRIOR_CONTEXT_HEADER) :]
    return before.strip("\n")


def _head(rows: list[Planned], start: int, at: int) -> tuple[int, list[Planned]]:
    """The compaction's head: how many rows just before ``rows[at]`` are Hermes's copies, in
    order, of the rows the generation before opened with (``rows[start:]``, or those of them
    still live then: an ``/undo`` may have taken back the first ones), and those rows."""
    plain = list(range(start, at))
    kept = [i for i in plain if rows[i].kind != ROLLED_BACK]
    best, chosen = 0, plain
    for earlier in (plain, kept) if len(kept) < len(plain) else (plain,):
        for m in range(best + 1, min(MAX_HEAD, len(earlier)) + 1):
            if earlier[m - 1] >= at - m:  # the copies come after what they repeat
                break
            if all(_placed(rows[at - m + k], rows[earlier[k]]) for k in range(m)):
                best, chosen = m, earlier
    return best, [rows[i] for i in chosen[:best]]


def _head_count(rows: list[Planned], start: int, at: int) -> int:
    return _head(rows, start, at)[0]


def _placed(copy: Planned, original: Planned) -> bool:
    return repeats(copy, original) or _stamped(copy, original)


def _unmatched(copy: Planned, original: Planned, summary: Planned, where: str) -> str:
    return (
        f"session {copy.link} message {copy.hermes_id}: in the {where} that the compaction of "
        f"message {summary.hermes_id} copied, it stands for message {original.hermes_id} "
        f"(session {original.link}) but does not repeat it as Hermes copies; imported without "
        "a link to it (search may show both)"
    )


def _link(copy: Planned, original: Planned, summary: Planned) -> None:
    copy.continues = copy.continues or original.hermes_id
    if summary.timestamp is not None and copy is not summary:
        copy.copied = summary.timestamp


def _match_tail(
    replaced: list[Planned], summary: Planned, after: list[Planned], unmatched: list[str]
) -> None:
    """Pair the copied tail with its originals, row by row: the copies come first after the
    summary (the first of them inside a merged carrier) and stand for the last rows of what was
    replaced, in order. Each row after the summary votes for the tail lengths under which it
    would repeat its original (by its text as Hermes replays it, its tool ids, or its kept
    timestamp); of the lengths two in three of whose rows repeat their originals, the one with
    most votes wins, and within it each copy that repeats its original records it (``continues``),
    the others are reported. Rolled back rows are left out unless a copy keeps their
    timestamp; matched originals that Hermes marked superseded (``compacted=0``) are archived."""
    after = after[: min(len(replaced) + 1, MAX_TAIL)]
    carried = _carried_text(summary)
    # A merged carrier stands for its tail message: that text, the carrier's tool fields.
    inside = replace(summary, text=carried, parts=None, _key=None) if carried is not None else None
    pool = [summary, *after] if inside is not None else after

    def key(row: Planned) -> tuple:
        return inside.key if row is summary and inside is not None else row.key

    def stamp(row: Planned) -> tuple | None:
        if row is summary:  # a carrier keeps its tail message's timestamp; a summary has its own
            row = inside  # type: ignore[assignment]
        if row is None or row.timestamp is None:
            return None
        return (row.role, row.timestamp)

    keys = {key(c) for c in pool}
    stamps = {stamp(c) for c in pool} - {None}
    # A row taken back is an original only where a copy keeps its timestamp (the superseded
    # tail originals of some builds): its text alone may recur by chance.
    candidates = [
        r
        for r in replaced
        if r.kind != ROLLED_BACK or stamp(r) in stamps or (r.timestamp is None and r.key in keys)
    ]
    n, limit = len(candidates), min(len(candidates), len(pool))
    if not limit:
        return
    by_key: dict[tuple, list[int]] = {}
    by_stamp: dict[tuple, list[int]] = {}
    for j, row in enumerate(candidates):
        by_key.setdefault(row.key, []).append(j)
        if (s := stamp(row)) is not None:
            by_stamp.setdefault(s, []).append(j)
    votes: Counter[int] = Counter()
    for i, copy in enumerate(pool[:limit]):
        places = set(by_key.get(key(copy), ())[-MAX_CANDIDATES:])
        if (s := stamp(copy)) is not None:
            places.update(by_stamp.get(s, ())[-MAX_CANDIDATES:])
        for j in places:
            k = n - j + i  # copy i repeats candidates[j] when the tail is k rows long
            if i < k <= limit:
                votes[k] += 1
    # A tail is its copies, one after another: a length whose rows mostly do not repeat their
    # originals (two in three must) is rows that repeat earlier text by chance ("ok", "Done.", a
    # reply that recurs), however many. Of the others, most votes; of equal votes the shortest.
    lengths = [length for length, n_votes in votes.items() if 3 * n_votes >= 2 * length]
    if not lengths:
        return
    k = max(lengths, key=lambda length: (votes[length], -length))
    for original, copy in zip(candidates[-k:], pool[:k], strict=True):
        ok = repeats(inside if copy is summary and inside is not None else copy, original)
        if ok:
            _link(copy, original, summary)
            if original.kind != LIVE:
                original.kind = ARCHIVED
        else:
            unmatched.append(_unmatched(copy, original, summary, "tail"))


def _kept_in_a_head(
    rows: list[Planned],
    start: int,
    at: int,
    candidates: list[int],
    previous_live: list[Planned],
    opens_continuation: bool,
) -> bool:
    """Whether the summary at ``rows[at]`` is Hermes's copy of an earlier one, kept in a later
    compaction's head (Hermes protects the first messages again when a new process compacts,
    and after a compaction that kept no head those begin with its summary), rather than a
    compaction of its own: in a continuation, the rows up to it repeat the parent's first live
    rows; in place, a later summary's head reaches back over it."""
    if opens_continuation:
        # The handoff's head copies come first; a later summary must end them.
        later = next((c for c in candidates if c > at), None)
        return (
            later is not None
            and later <= len(previous_live)
            and all(_placed(rows[k], previous_live[k]) for k in range(later))
        )
    return any(
        _head_count(rows, start, later) >= later - at
        for later in candidates
        if at < later <= at + MAX_HEAD
    )


def _blocks(
    link_rows: list[Planned],
    previous_live: list[Planned],
    continuation: bool,
    seen: set[tuple[tuple, float]],
) -> list[tuple[int, int, int, list[Planned]]]:
    """The link's compactions, in order: (the summary's index, its head's length, where the
    block it replaced began, the rows its head repeats). A continuation's first summary is
    preceded by the handoff of its parent's live rows (its head, all of it). ``seen``: the
    summaries met so far, by what a copy keeps (their text and timestamp)."""
    candidates = [i for i, row in enumerate(link_rows) if row.summary]
    blocks: list[tuple[int, int, int, list[Planned]]] = []
    start = 0
    for at in candidates:
        row = link_rows[at]
        # A copy of a summary keeps its text and its timestamp; a new one has a time of its own.
        copied = row.timestamp is not None and (row.key, row.timestamp) in seen
        if row.timestamp is not None:
            seen.add((row.key, row.timestamp))
        opens = continuation and not blocks
        if copied or _kept_in_a_head(link_rows, start, at, candidates, previous_live, opens):
            continue
        head, earlier = (at, previous_live) if opens else _head(link_rows, start, at)
        blocks.append((at, head, start, earlier))
        start = at - head
    return blocks


def infer(conversation: Conversation, rows: list[Planned]) -> None:
    """Set each row's kind across links, the summary that replaced it, and the row a copy
    repeats; note on the conversation where provenance cannot be told."""
    by_link: dict[str, list[Planned]] = {}
    for row in rows:
        by_link.setdefault(row.link, []).append(row)
    previous_live: list[Planned] = []
    seen: set[tuple[tuple, float]] = set()
    for index, link in enumerate(conversation.links):
        link_rows = by_link.get(link, [])
        blocks = _blocks(link_rows, previous_live, index > 0, seen)
        for n, (at, head, start, earlier) in enumerate(blocks):
            summary = link_rows[at]
            rotated = index > 0 and n == 0
            replaced = previous_live if rotated else link_rows[start : at - head]
            for k in range(min(head, len(earlier))):
                copy = link_rows[at - head + k]
                if repeats(copy, earlier[k]):
                    _link(copy, earlier[k], summary)
                else:
                    conversation.unmatched.append(_unmatched(copy, earlier[k], summary, "head"))
            # The tail's copies come before the next compaction's block (its head copies).
            end = blocks[n + 1][0] - blocks[n + 1][1] if n + 1 < len(blocks) else len(link_rows)
            _match_tail(replaced, summary, link_rows[at + 1 : end], conversation.unmatched)
            for row in replaced:
                if row.kind == LIVE and rotated:  # a rotated parent's rows
                    row.kind = ARCHIVED
                if row.kind == ARCHIVED and row.summarized_by is None:
                    row.summarized_by = summary.hermes_id
                    row.ended = summary.timestamp
        if index > 0 and not blocks:
            for row in previous_live:
                row.kind = ARCHIVED
        previous_live = [r for r in link_rows if r.kind == LIVE]
    missing = sum(1 for r in rows if r.kind == ARCHIVED and r.summarized_by is None)
    if missing:
        conversation.notes.append(
            f"{missing} archived rows: no summary that replaced them could be told from the "
            "rows (Hermes records none); they are archived without a link to one"
        )
