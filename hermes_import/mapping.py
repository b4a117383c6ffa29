"""Hermes's rows as this store's rows: which conversation a session belongs to, each row's kind,
and what each summary replaced (Hermes records no link; it is inferred here).

A **conversation** is a rotation chain: a session ended with ``end_reason='compression'`` and its
continuation child, and so on; its newest link is live. Children tagged as delegates, branches
or resets are conversations of their own.

Inside one session a compaction marks every active row inactive (``compacted=1``; the originals
of the tail it copies ``compacted=0``) and then inserts head copies, the summary and tail copies
as fresh rows. So the rows a summary replaced are the inactive rows between the start of the
previous generation's block and the start of its own; a block starts at its head copies, found
as the rows just before the summary that repeat the session's first rows word for word.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hermes_import.format import (
    MERGED_PRIOR_CONTEXT_HEADER,
    MERGED_SUMMARY_DELIMITER,
    SEPARATE_MARKERS,
    decode_content,
    is_summary_text,
)

ROLES = ("system", "user", "assistant", "tool")
LIVE, ARCHIVED, ROLLED_BACK = "live", "archived", "rolled_back"
# Hermes keeps a handful of head messages (protect_first_n, 3 by default); looking further for
# head copies only costs time on long runs of repeated text.
MAX_HEAD = 64


@dataclass
class Conversation:
    links: list[str]  # Hermes session ids, oldest first; the last is live
    notes: list[str] = field(default_factory=list)

    @property
    def root(self) -> str:
        return self.links[0]

    @property
    def tip(self) -> str:
        return self.links[-1]


def _markers(session: dict[str, Any]) -> dict[str, Any]:
    raw = session.get("model_config")
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def conversations(sessions: dict[str, dict[str, Any]]) -> list[Conversation]:
    """Sessions grouped into conversations; a child continues its parent only when the parent
    ended by compression, no lineage marker of the child names the parent, and it is not a
    tool child. Of several continuations the newest carries the chain; the others stand alone."""
    continuation: dict[str, list[str]] = {}
    notes: dict[str, list[str]] = {}
    for sid, session in sessions.items():
        parent_id = session.get("parent_session_id")
        if not parent_id:
            continue
        parent = sessions.get(parent_id)
        if parent is None:
            notes.setdefault(sid, []).append(
                f"parent session {parent_id} is not in the store; imported on its own"
            )
            continue
        markers = _markers(session)
        separate = any(markers.get(m) == parent_id for m in SEPARATE_MARKERS)
        if (
            parent.get("end_reason") == "compression"
            and not separate
            and session["source"] != "tool"
        ):
            continuation.setdefault(parent_id, []).append(sid)
    next_link: dict[str, str] = {}
    for parent_id, children in continuation.items():
        children.sort(key=lambda c: (sessions[c]["started_at"] or 0, c))
        next_link[parent_id] = children[-1]
        for other in children[:-1]:
            notes.setdefault(other, []).append(
                f"one of several continuations of {parent_id}; imported on its own"
            )
    linked = set(next_link.values())
    out = []
    for sid in sorted(sessions, key=lambda s: (sessions[s]["started_at"] or 0, s)):
        if sid in linked:
            continue
        links = [sid]
        while links[-1] in next_link and next_link[links[-1]] not in links:
            links.append(next_link[links[-1]])
        conversation = Conversation(links)
        for link in links:
            conversation.notes += notes.get(link, [])
        out.append(conversation)
    return out


@dataclass
class Planned:
    """One Hermes row as it lands here."""

    hermes_id: int
    link: str
    role: str
    text: str | None
    parts: list | dict | None
    tool_calls: list | None
    tool_call_id: str | None
    kind: str  # live, archived or rolled_back
    summary: bool
    timestamp: float | None
    origin: dict[str, Any]
    summarized_by: int | None = None  # Hermes id of the summary that replaced it
    continues: int | None = None  # Hermes id of the row this one repeats word for word


def _same(a: Planned, b: Planned) -> bool:
    return (a.role, a.text, a.parts, a.tool_calls, a.tool_call_id) == (
        b.role,
        b.text,
        b.parts,
        b.tool_calls,
        b.tool_call_id,
    )


def _carried_text(carrier: Planned) -> str | None:
    """The tail message inside a merged carrier (the part before the delimiter)."""
    text = carrier.text or ""
    if MERGED_SUMMARY_DELIMITER not in text:
        return None
    before = text.split(MERGED_SUMMARY_DELIMITER, 1)[0]
    if before.startswith(MERGED_PRIOR_CONTEXT_HEADER):
        before = before[len(MERGED_PRIOR_CONTEXT_HEADER) :]
    return before.strip("\n")


def _clean(value: Any) -> Any:
    """NUL characters out of every string (PostgreSQL stores none, in text or JSON)."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    return value


def plan_row(row: dict[str, Any], skipped: list[str]) -> Planned | None:
    """One stored row decoded, or None (and a line in ``skipped``) for a row that is not a
    message of a conversation."""
    where = f"session {row['session_id']} message {row['id']}"
    role = row["role"]
    if role not in ROLES:
        skipped.append(f"{where}: role {role!r} is Hermes bookkeeping, not a message")
        return None
    if role == "tool" and not row["tool_call_id"]:
        skipped.append(f"{where}: a tool result without the id of the call it answers")
        return None
    origin: dict[str, Any] = {"system": "hermes", "session": row["session_id"], "id": row["id"]}
    text, parts = decode_content(row["content"])
    cleaned = _clean([text, parts, row["tool_calls"], row["tool_call_id"]])
    if cleaned != [text, parts, row["tool_calls"], row["tool_call_id"]]:
        origin["repaired"] = "NUL bytes replaced with U+FFFD"
    text, parts = cleaned[0], cleaned[1]
    row = {**row, "tool_calls": cleaned[2], "tool_call_id": cleaned[3]}
    if any(type(v).__name__ == "Repaired" for v in (row["content"], row["tool_calls"])):
        origin["repaired"] = "invalid UTF-8 (a lone surrogate?) replaced with U+FFFD"
    tool_calls = None
    if row["tool_calls"]:
        try:
            decoded = json.loads(row["tool_calls"])
        except ValueError:
            decoded = None
        if isinstance(decoded, list) and all(isinstance(c, dict) for c in decoded):
            tool_calls = decoded or None
        else:
            origin["tool_calls_unreadable"] = str(row["tool_calls"])[:10_000]
    if "repaired" in origin or "tool_calls_unreadable" in origin:
        what = origin.get("repaired") or "tool_calls is not a JSON list; kept aside, not sent"
        skipped.append(f"{where}: imported with a change: {what}")
    for key in (
        "tool_name",
        "finish_reason",
        "reasoning",
        "reasoning_content",
        "reasoning_details",
        "codex_reasoning_items",
        "codex_message_items",
        "platform_message_id",
        "display_kind",
    ):
        if row.get(key) not in (None, ""):
            origin[key] = _clean(row[key])
    active, compacted = bool(row["active"]), bool(row["compacted"])
    kind = LIVE if active else ARCHIVED if compacted else ROLLED_BACK
    summary = bool(row["_compressed_summary"]) or (
        role in ("user", "assistant") and is_summary_text(text)
    )
    return Planned(
        hermes_id=row["id"],
        link=row["session_id"],
        role=role,
        text=text,
        parts=parts,
        tool_calls=tool_calls,
        tool_call_id=row["tool_call_id"],
        kind=kind,
        summary=summary,
        timestamp=row["timestamp"],
        origin=origin,
    )


def _head_count(rows: list[Planned], start: int, at: int) -> int:
    """How many rows just before ``rows[at]`` repeat, in order, the rows the generation before
    opened with (``rows[start:]``): the compaction's head copies."""
    best = 0
    for m in range(1, min(MAX_HEAD, (at - start) // 2) + 1):
        if all(_same(rows[at - m + k], rows[start + k]) for k in range(m)):
            best = m
    return best


def _match_tail(replaced: list[Planned], summary: Planned, after: list[Planned]) -> None:
    """Pair the copied tail with its originals: the longest run at the end of what was replaced
    that the rows after the summary repeat (the first of them inside a merged carrier). Rolled
    back rows that nothing repeats are left out of the run; matched originals that Hermes marked
    superseded (``compacted=0``) are archived, and each copy records the row it repeats."""
    after = after[: len(replaced) + 1]  # copies of the tail come first; no more than it had
    carried = _carried_text(summary)
    copies_pool = [summary, *after] if carried is not None else after
    candidates = [
        r
        for r in replaced
        if r.kind != ROLLED_BACK
        or any(_same(r, c) for c in after)
        or (r.text == carried and r.role == summary.role)
    ]
    for k in range(min(len(candidates), len(copies_pool)), 0, -1):
        originals, copies = candidates[-k:], copies_pool[:k]
        if all(
            (c is summary and o.text == carried and o.role == c.role)
            or (c is not summary and _same(o, c))
            for o, c in zip(originals, copies, strict=True)
        ):
            for original, copy in zip(originals, copies, strict=True):
                copy.continues = copy.continues or original.hermes_id
                if original.kind != LIVE:
                    original.kind = ARCHIVED
            return


def infer(conversation: Conversation, rows: list[Planned]) -> None:
    """Set each row's kind across links, the summary that replaced it, and the row a copy
    repeats; note on the conversation where provenance cannot be told."""
    by_link: dict[str, list[Planned]] = {}
    for row in rows:
        by_link.setdefault(row.link, []).append(row)
    previous_live: list[Planned] = []
    for index, link in enumerate(conversation.links):
        link_rows = by_link.get(link, [])
        summaries = [i for i, r in enumerate(link_rows) if r.summary]
        start = 0
        for n, at in enumerate(summaries):
            summary = link_rows[at]
            if index > 0 and n == 0:
                # A continuation opens with the handoff of its parent's live rows.
                head, replaced, earlier = at, previous_live, previous_live
            else:
                head = _head_count(link_rows, start, at)
                replaced, earlier = link_rows[start : at - head], link_rows[start:]
            for k in range(min(head, len(earlier))):
                copy = link_rows[at - head + k]
                if _same(copy, earlier[k]):
                    copy.continues = earlier[k].hermes_id
            _match_tail(replaced, summary, link_rows[at + 1 :])
            rotated = index > 0 and n == 0
            for row in replaced:
                if row.kind == LIVE and rotated:  # a rotated parent's rows
                    row.kind = ARCHIVED
                if row.kind == ARCHIVED and row.summarized_by is None:
                    row.summarized_by = summary.hermes_id
            start = at - head
        if index > 0 and not summaries:
            for row in previous_live:
                row.kind = ARCHIVED
        previous_live = [r for r in link_rows if r.kind == LIVE]
    missing = sum(1 for r in rows if r.kind == ARCHIVED and r.summarized_by is None)
    if missing:
        conversation.notes.append(
            f"{missing} archived rows: no summary that replaced them could be told from the "
            "rows (Hermes records none); they are archived without a link to one"
        )
