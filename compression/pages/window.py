"""A page of one session's rows, by position (keyset), opened at the head, the tail, before or
after a position, or around one: each page is one or two index range reads, so its cost does
not depend on how long the session is or how much of it is archived."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet
from django.http import QueryDict

from sessions_app.models import Message

PAGE = 200
_MAX_POSITION = 2**31


def number(text: str | None, below: int = _MAX_POSITION) -> int | None:
    """A non-negative decimal number under ``below`` (ASCII digits only: int() would also take
    other scripts' digits, signs and spaces), else None."""
    if not text or not (text.isascii() and text.isdigit()) or len(text) > len(str(below)):
        return None
    value = int(text)
    return value if value < below else None


class BadPage(ValueError):
    """A page parameter that is not a message number."""


@dataclass(frozen=True)
class Request:
    around: int | None = None
    before: int | None = None
    after: int | None = None
    head: bool = False

    @classmethod
    def parse(cls, query: QueryDict) -> Request:
        values = {}
        for name in ("around", "before", "after"):
            text = query.get(name, "").strip().removeprefix("#")
            if not text:
                continue
            if number(text) is None:
                raise BadPage(f"“{name}” must be a message number such as 42, not {text!r}.")
            values[name] = int(text)
        return cls(head=query.get("at") == "head", **values)


# A row's text is folded past this many lines or characters: tool output, system prompts and
# code after a few lines, conversation after a screenful.
_SHORT = (8, 1_200)
_LONG = (60, 8_000)


def readable(rows: list[Message]) -> list[Message]:
    """Mark each row for display: ``mono`` (tool output, code), ``folded`` (shown collapsed,
    with ``lines`` and ``chars`` telling its size) and ``preview`` (its first lines)."""
    for row in rows:
        text = row.content or ""
        lines, chars = text.count("\n") + 1, len(text)
        mono = row.role == Message.Role.TOOL or "```" in text
        max_lines, max_chars = _SHORT if mono or row.role == Message.Role.SYSTEM else _LONG
        folded = lines > max_lines or chars > max_chars
        preview = "\n".join(text.split("\n", 3)[:3])[:300] if folded else ""
        # For the template: attributes of this instance, not fields of the model.
        vars(row).update(
            lines=lines,
            chars=chars,
            mono=mono,
            folded=folded,
            preview=preview,
            calls=[(_name(call), _arguments(call)) for call in row.tool_calls or []],
        )
    return rows


def _name(call: Any) -> str:
    function = call.get("function") if isinstance(call, dict) else None
    return str(function.get("name", "")) if isinstance(function, dict) else ""


def _arguments(call: Any) -> str:
    """A call's arguments as a person reads them: JSON that another system wrote with its
    non-ASCII text escaped (``\\u65e5``, as Hermes stores them) is shown with the text itself."""
    function = call.get("function") if isinstance(call, dict) else None
    arguments = function.get("arguments", "") if isinstance(function, dict) else ""
    if not isinstance(arguments, str):
        return json.dumps(arguments, ensure_ascii=False)
    if "\\u" not in arguments:
        return arguments
    try:
        return json.dumps(json.loads(arguments), ensure_ascii=False)
    except ValueError:
        return arguments


@dataclass(frozen=True)
class Window:
    rows: list[Message]
    older: int | None  # the first row's position, when rows before it exist (?before=)
    newer: int | None  # the last row's position, when rows after it exist (?after=)


def window(rows: QuerySet[Message], want: Request, page: int = PAGE) -> Window:
    """``rows``: one session's rows of one kind (an index on position serves them)."""
    forward = rows.order_by("position", "id")
    backward = rows.order_by("-position", "-id")
    if want.around is not None:
        half = page // 2
        before = list(backward.filter(position__lt=want.around)[: half + 1])
        after = list(forward.filter(position__gte=want.around)[: page - half + 1])
        found = before[:half][::-1] + after[: page - half]
        more_before, more_after = len(before) > half, len(after) > page - half
    elif want.after is not None or want.head:
        start = forward.filter(position__gt=want.after) if want.after is not None else forward
        after = list(start[: page + 1])
        found, more_after = after[:page], len(after) > page
        more_before = want.after is not None and backward.filter(position__lte=want.after).exists()
    else:  # the tail, or the page before a position
        end = backward.filter(position__lt=want.before) if want.before is not None else backward
        before = list(end[: page + 1])
        found, more_before = before[:page][::-1], len(before) > page
        more_after = want.before is not None and forward.filter(position__gte=want.before).exists()
    return Window(
        readable(found),
        found[0].position if found and more_before else None,
        found[-1].position if found and more_after else None,
    )
