"""Words for people: counts with their noun in the right number."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 session``, ``2 sessions``, ``1,200 entries``: thousands separated, the noun
    singular for exactly one."""
    word = noun if n == 1 else (plural or _plural(noun))
    return f"{n:,} {word}"


def _plural(noun: str) -> str:
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    return noun + "s"
