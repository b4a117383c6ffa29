"""A deterministic local summary (SPEC L4), used when the summary model fails or none is
configured: who asked what, which tools ran on what, files and identifiers, errors, and where the
conversation stood. Built only from the compressed rows' own text; no model involved."""

from __future__ import annotations

import json
import re

from compression.prompt import strip_markers
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


def local_summary(chat: list[Message], previous: list[Message], max_chars: int) -> str:
    asks, actions, errors, files = [], [], [], {}
    for m in chat:
        text = m.content or ""
        if m.role == Message.Role.USER:
            asks.append(f"- #{m.position}: {_short(text, 200)}")
        for call in m.tool_calls or ():
            name = (call.get("function") or {}).get("name", "?")
            actions.append(f"- #{m.position} {name}({_arguments(call)})")
        for found in PATH.findall(text + " " + json.dumps(m.tool_calls or [])):
            files.setdefault(found.strip(), None)
        if m.role in (Message.Role.TOOL, Message.Role.ASSISTANT):
            for line in ERROR.findall(text)[:2]:
                errors.append(f"- #{m.position}: {_short(line, 160)}")
    last_user = next((m for m in reversed(chat) if m.role == Message.Role.USER), None)
    last_reply = next(
        (m for m in reversed(chat) if m.role == Message.Role.ASSISTANT and m.content), None
    )
    sections = []
    if previous:
        earlier = "\n\n".join(strip_markers(p.content or "") for p in previous)
        sections.append("## Earlier summary\n" + _short(earlier, max_chars // 3))
    first, last = (chat[0].position, chat[-1].position) if chat else (0, 0)
    sections.append(
        f"## Scope\n{len(chat)} messages (#{first} to #{last}) archived; search finds all of it."
    )
    if asks:
        sections.append("## User requests\n" + "\n".join(asks[-25:]))
    if actions:
        sections.append("## Tool actions\n" + "\n".join(actions[-30:]))
    if files:
        sections.append("## Files and identifiers\n" + ", ".join(list(files)[:60]))
    if errors:
        sections.append("## Errors seen\n" + "\n".join(errors[-15:]))
    state = []
    if last_user is not None:
        request = _short(last_user.content or "", 300)
        state.append(f"Last request in this span (#{last_user.position}): {request}")
    if last_reply is not None:
        state.append(
            f"Last reply (#{last_reply.position}): {_short(last_reply.content or '', 300)}"
        )
    if state:
        sections.append("## Where it stood\n" + "\n".join(state))
    text = "\n\n".join(sections)
    if len(text) > max_chars:
        text = text[: max_chars - 40].rsplit("\n", 1)[0] + "\n[… local summary truncated …]"
    return text
