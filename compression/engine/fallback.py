"""A deterministic local summary (SPEC L4), used when the summary model fails or none is
configured: who asked what, which tools ran on what, files and identifiers, errors, and where the
conversation stood. Built only from the compressed rows' own text; no model involved."""

from __future__ import annotations

import json
import re

from compression.engine.prompt import strip_markers
from sessions_app.models import Message

PATH = re.compile(
    r"(?<![\w/])(?:/[\w.@-]+){2,}|\b[\w-]+\.(?:py|js|ts|go|rs|java|rb|yaml|yml|json|toml|md|conf|sql|sh|html|css|txt|log|ini|cfg)\b"
)
ERROR = re.compile(
    r"[^\n]*(?:\b(?:Error|Exception|Traceback|FAILED|failed|fatal|panic|refused|timed out)\b"
    r"|错误|失败|异常|超时)[^\n]*"
)


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _arguments(call: dict) -> str:
    arguments = (call.get("function") or {}).get("arguments", "")
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            return _short(arguments, 80)
    else:
        parsed = arguments
    if isinstance(parsed, dict):
        return ", ".join(f"{k}={_short(str(v), 60)}" for k, v in list(parsed.items())[:3])
    return _short(str(parsed), 80)


STRETCHES = 8  # the span is told in at most this many stretches, each with its share
STRETCH_MIN_CHARS = 500  # ...and no more stretches than leave each this much room
MIN_CHARS = 400  # the smallest budget a local summary is given


# What a stretch tells first when its share cannot hold everything.
ASK, ERROR_NOTE, CALL, REPLY = range(4)


def _notes(m: Message) -> list[tuple[int, str]]:
    """What a message contributes, each with its rank: the user's ask, errors, each tool call,
    an assistant reply."""
    text = m.content or ""
    notes = []
    if m.role == Message.Role.USER:
        notes.append((ASK, f"- #{m.position} user: {_short(text, 200)}"))
    for call in m.tool_calls or ():
        name = (call.get("function") or {}).get("name", "?")
        notes.append((CALL, f"- #{m.position} {name}({_arguments(call)})"))
    if m.role in (Message.Role.TOOL, Message.Role.ASSISTANT):
        for line in ERROR.findall(text)[:2]:
            notes.append((ERROR_NOTE, f"- #{m.position} error: {_short(line, 160)}"))
    if m.role == Message.Role.ASSISTANT and text and not m.tool_calls:
        notes.append((REPLY, f"- #{m.position} reply: {_short(text, 160)}"))
    return notes


def _evenly(indexes: list[int], count: int) -> list[int]:
    if count >= len(indexes):
        return indexes
    if count <= 1:
        return indexes[:count]
    step = (len(indexes) - 1) / (count - 1)
    return [indexes[round(k * step)] for k in range(count)]


def _fit(notes: list[tuple[int, str]], budget: int) -> list[str]:
    """As much as fits in ``budget`` characters: the user's asks first, then errors, tool calls
    and replies, each kind taken evenly across the stretch, in conversation order, with a
    marker where notes were left out."""
    if sum(len(text) + 1 for _, text in notes) <= budget:
        return [text for _, text in notes]
    chosen: set[int] = set()
    left = budget
    for rank in (ASK, ERROR_NOTE, CALL, REPLY):
        of_rank = [i for i, (r, _) in enumerate(notes) if r == rank]
        if not of_rank or left <= 0:
            continue
        average = sum(len(notes[i][1]) + 1 for i in of_rank) / len(of_rank)
        take = _evenly(of_rank, int(left // average))
        chosen.update(take)
        left -= sum(len(notes[i][1]) + 1 for i in take)
    out, last = [], -1
    for index in sorted(chosen):
        if index > last + 1:
            out.append(f"- [… {index - last - 1} more …]")
        out.append(notes[index][1])
        last = index
    if last < len(notes) - 1:
        out.append(f"- [… {len(notes) - 1 - last} more …]")
    return out


def local_summary(chat: list[Message], previous: list[Message], max_chars: int) -> str:
    """Spread over the whole span: the span is cut into up to ``STRETCHES`` stretches of equal
    length, each with an equal share of the budget, so the start of a long span is told as
    fully as its end. Every stretch names the positions it covers. The budget is
    ``max_chars``, and at most a third of the span's own text (a summary must be smaller than
    what it replaces)."""
    source = sum(len(m.content or "") + len(json.dumps(m.tool_calls or "")) for m in chat)
    max_chars = min(max_chars, max(MIN_CHARS, source // 3))
    sections = []
    if previous:
        earlier = "\n\n".join(strip_markers(p.content or "") for p in previous)
        sections.append("## Earlier summary\n" + _short(earlier, max_chars // 3))
    first, last = (chat[0].position, chat[-1].position) if chat else (0, 0)
    sections.append(
        f"## Scope\n{len(chat)} messages (#{first} to #{last}) archived; search finds all of "
        "it. Below, the span in stretches, each naming the positions it covers."
    )
    files: dict[str, None] = {}
    for m in chat:
        for found in PATH.findall((m.content or "") + " " + json.dumps(m.tool_calls or [])):
            files.setdefault(found.strip(), None)
    file_section = "## Files and identifiers\n" + ", ".join(list(files)[:60]) if files else ""
    used = sum(len(x) + 2 for x in sections) + len(file_section) + 2
    count = min(STRETCHES, len(chat), max(1, (max_chars - used) // STRETCH_MIN_CHARS)) or 1
    size = -(-len(chat) // count)
    stretches = [chat[k : k + size] for k in range(0, len(chat), size)]
    share = max(STRETCH_MIN_CHARS // 2, (max_chars - used) // max(1, len(stretches)) - 40)
    for stretch in stretches:
        notes = [note for m in stretch for note in _notes(m)]
        heading = f"## #{stretch[0].position} to #{stretch[-1].position} ({len(stretch)} messages)"
        body = "\n".join(_fit(notes, share)) if notes else "- (no text)"
        sections.append(f"{heading}\n{body}")
    if file_section:
        sections.append(file_section)
    text = "\n\n".join(sections)
    if len(text) > max_chars:
        text = text[: max_chars - 40].rsplit("\n", 1)[0] + "\n[… local summary truncated …]"
    return text
