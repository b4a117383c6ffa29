"""Hermes's rows as this store's rows: which conversation a session belongs to, and each row
decoded, with the kind Hermes's flags give it.

A **conversation** is a rotation chain: a session ended with ``end_reason='compression'`` and its
continuation child, and so on; its newest link is live. Children tagged as delegates, branches
or resets are conversations of their own.

What each summary replaced, and which rows are Hermes's copies of which, is inferred in
:mod:`hermes_import.provenance`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hermes_import.format import SEPARATE_MARKERS, decode_content, is_summary_text, replay_text

ROLES = ("system", "user", "assistant", "tool")
LIVE, ARCHIVED, ROLLED_BACK = "live", "archived", "rolled_back"


@dataclass
class Conversation:
    links: list[str]  # Hermes session ids, oldest first; the last is live
    notes: list[str] = field(default_factory=list)
    # Copies that do not repeat the row they stand for, one line each with the Hermes ids.
    unmatched: list[str] = field(default_factory=list)

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
    continues: int | None = None  # Hermes id of the row this one is Hermes's copy of
    ended: float | None = None  # when it left the live context: its compaction's time
    copied: float | None = None  # a copy: when Hermes wrote it (its compaction's time)
    _key: tuple | None = field(default=None, repr=False, compare=False)

    @property
    def key(self) -> tuple:
        """What a copy of this row keeps: its role and its text as Hermes replays it, or the
        ids that tie a tool result or a tool call to its turn."""
        if self._key is None:
            if self.role == "tool":
                self._key = ("tool", self.tool_call_id)
            elif self.role == "assistant" and self.tool_calls:
                self._key = ("calls", call_ids(self.tool_calls))
            elif self.role in ("user", "assistant"):
                self._key = (self.role, replay_text(self.text))
            else:
                self._key = (self.role, self.text)
        return self._key


def call_ids(calls: list | None) -> tuple:
    return tuple(c.get("id") for c in calls or () if isinstance(c, dict))


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
        "effect_disposition",
        "token_count",
    ):
        if row.get(key) not in (None, ""):
            origin[key] = _clean(row[key])
    if row.get("observed"):
        origin["observed"] = True
    # What Hermes really sent, where it differs from what it stored (a pasted memory-context
    # block, a plugin's injection; a copy's is the original's text as sent).
    sent = row.get("api_content")
    if isinstance(sent, str) and sent and sent != row["content"]:
        origin["api_content"] = _clean(sent)
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
