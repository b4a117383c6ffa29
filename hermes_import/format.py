"""Hermes Agent's stored forms: how its ``state.db`` writes content and marks a compaction.

The strings are Hermes's own (its context compressor's prefixes and markers); a summary row is
recognised by its flag where the schema has one, else by any prefix Hermes has ever written.
"""

from __future__ import annotations

import json
import re
from typing import Any

# Structured (multimodal) content is stored as this prefix + json.dumps(parts).
CONTENT_JSON_PREFIX = "\x00json:"

SUMMARY_PREFIX = (
    "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary "
    "below. This is a handoff from a previous context window — treat it as background "
    "reference, NOT as active instructions. Do NOT answer questions or fulfill requests "
    "mentioned in this summary; they were already addressed. Respond ONLY to the latest "
    "user message that appears AFTER this summary — that message is the single source of "
    "truth for what to do right now. Topic overlap with the summary does NOT mean you "
    "should resume its task: even on similar topics, the latest user message WINS. Treat "
    "ONLY the latest message as the active task and discard stale items from '## "
    "Historical Task Snapshot' / '## Historical In-Progress State' / '## Historical "
    "Pending User Asks' / '## Historical Remaining Work' entirely — do not 'wrap up' or "
    "'finish' work described there unless the latest message explicitly asks for it. "
    "Reverse signals in the latest message (e.g. 'stop', 'undo', 'roll back', 'just "
    "verify', 'don't do that anymore', 'never mind', a new topic) must immediately end "
    "any in-flight work described in the summary; do not re-surface it in later turns. "
    "IMPORTANT: Your persistent memory (MEMORY.md, USER.md) in the system prompt is "
    "ALWAYS authoritative and active — never ignore or deprioritize memory content due to "
    "this compaction note. None of the above restricts HOW you work: your tools remain "
    "fully active — keep calling them normally for the active task (edit files, run "
    "commands, search) instead of merely narrating what you would do. The current session "
    "state (files, config, etc.) may reflect work described here — avoid repeating it:"
)
LEGACY_SUMMARY_PREFIX = "[CONTEXT SUMMARY]:"
SUMMARY_END_MARKER = (
    "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"
)
MERGED_PRIOR_CONTEXT_HEADER = "[PRIOR CONTEXT — for reference only; not a new message]"
MERGED_SUMMARY_DELIMITER = "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]"
# Every compaction prefix Hermes has written starts with one of these.
SUMMARY_STARTS = ("[CONTEXT COMPACTION", LEGACY_SUMMARY_PREFIX)

# Lineage markers in sessions.model_config: a child that is its own conversation.
SEPARATE_MARKERS = ("_delegate_from", "_branched_from", "_reset_from")


def decode_content(raw: Any) -> tuple[str | None, list | dict | None]:
    """(text, parts): plain text, or structured content decoded from Hermes's JSON form (its text
    parts joined as the text). Undecodable JSON stays as the stored text, as Hermes reads it."""
    if not isinstance(raw, str):
        return (None if raw is None else str(raw)), None
    if not raw.startswith(CONTENT_JSON_PREFIX):
        return raw, None
    try:
        parts = json.loads(raw[len(CONTENT_JSON_PREFIX) :])
    except ValueError:
        return raw, None
    if isinstance(parts, str):
        return parts, None
    if isinstance(parts, dict):
        parts = [parts]
    if not isinstance(parts, list):
        return raw, None
    texts = [p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type") == "text"]
    return "\n".join(t for t in texts if isinstance(t, str)), parts


def is_summary_text(text: str | None) -> bool:
    """A compaction carrier by its text: a summary prefix (current or legacy), or a tail message
    with a summary merged into it."""
    if not text:
        return False
    stripped = text.lstrip(" \t\r\n")
    if stripped.startswith(SUMMARY_STARTS) or stripped.startswith(MERGED_PRIOR_CONTEXT_HEADER):
        return True
    _, found, after = stripped.partition(MERGED_SUMMARY_DELIMITER)
    return bool(found) and after.lstrip().startswith(SUMMARY_STARTS)


# What Hermes does to a copy. It writes a compaction's head and tail copies from the messages it
# replayed, and it replays a stored user or assistant text as ``sanitize_context(text).strip()``
# (hermes_state.py, ``_rows_to_conversation``; agent/memory_manager.py): recalled-memory
# fences and their system note removed, surrounding blanks stripped.
_MEMORY_BLOCK = re.compile(r"<\s*memory-context\s*>[\s\S]*?</\s*memory-context\s*>", re.IGNORECASE)
_MEMORY_NOTE = re.compile(
    r"\[System note:\s*The following is recalled memory context,\s*NOT new user input\.\s*"
    r"Treat as (?:informational background data|authoritative reference data[^\]]*)\.\]\s*",
    re.IGNORECASE,
)
_MEMORY_FENCE = re.compile(r"</?\s*memory-context\s*>", re.IGNORECASE)

# Hermes's forms of a tool result it pruned in a copy (agent/context_compressor.py,
# ``_prune_old_tool_results``): a placeholder, a back-reference to a newer identical output,
# a one-line summary ("[terminal] ran `npm test` -> exit 0, 47 lines output"), a screenshot
# placeholder.
PRUNED_TOOL_PLACEHOLDER = "[Old tool output cleared to save context space]"
PRUNED_TOOL_DUPLICATE = "[Duplicate tool output — same content as a more recent call]"
# What Hermes leaves in an assistant message whose tool calls it stripped as orphans.
TOOL_CALL_REMOVED = "(tool call removed)"


def replay_text(text: str | None) -> str | None:
    """A stored user or assistant text as Hermes replays it (and so as it writes its copies)."""
    if text is None:
        return None
    if "<" not in text and "[" not in text:  # no fence, no note: the common case, fast
        return text.strip()
    text = _MEMORY_BLOCK.sub("", text)
    text = _MEMORY_NOTE.sub("", text)
    return _MEMORY_FENCE.sub("", text).strip()


# "[terminal] ran `npm test` -> exit 0, 47 lines output", "[read_file] read a.py from line 1
# (3,400 chars)", "[screenshot removed] ...": the tool's name in brackets, then what it did.
_PRUNED_SUMMARY = re.compile(r"\[[\w.:-]{1,64}(?: removed)?\]")


def is_pruned_tool_text(text: str | None) -> bool:
    """A tool result's text in one of the shortened forms Hermes writes into its copies."""
    if not text:
        return False
    if text in (PRUNED_TOOL_PLACEHOLDER, PRUNED_TOOL_DUPLICATE):
        return True
    return len(text) <= 2_000 and _PRUNED_SUMMARY.match(text) is not None
