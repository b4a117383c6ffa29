"""What each full-text index sees, computed the same way at write time (SQLite triggers call these
through registered SQL functions) and at query time.

* the *word* index gets the text with CJK runs spaced apart from Latin, so ``用Django写代码``
  yields the word ``django`` (unicode61 would otherwise read the whole string as one token);
* the *bigram* index gets every CJK run rewritten as overlapping two-character tokens plus the
  run's last character on its own (``写代码`` -> ``写代 代码 码``), Latin words untouched: any
  one-character query is then a prefix match and any longer one a phrase of bigrams;
* the *trigram* index gets the raw text.

Changing any function here changes what the triggers would delete, so it requires
``manage.py reindex`` (bump ``TEXT_VERSION`` and add a migration that calls it).
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache

from sessions_app.text import CJK_CHARS

TEXT_VERSION = 1

CJK_RUN = re.compile(f"[{CJK_CHARS}]+")
WORD = re.compile(r"\w+")


def search_text(content: str | None, tool_calls: str | list | None) -> str:
    """All searchable text of a message row: its content, then each tool call's name and
    arguments (a path in ``read_file``'s arguments was said too)."""
    parts = [content] if content else []
    if tool_calls:
        try:
            calls = json.loads(tool_calls) if isinstance(tool_calls, str) else tool_calls
            for call in calls if isinstance(calls, list) else ():
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict):
                    name = function.get("name")
                    arguments = function.get("arguments")
                    if not isinstance(arguments, str):
                        arguments = json.dumps(arguments, ensure_ascii=False)
                    parts.append(f"{name or ''} {arguments or ''}".strip())
        except (ValueError, TypeError, AttributeError):
            parts.append(str(tool_calls))
    return "\n".join(parts)


def word_text(text: str) -> str:
    return CJK_RUN.sub(lambda m: f" {m.group()} ", text)


def _bigram_run(run: str) -> str:
    return " ".join([run[i : i + 2] for i in range(len(run) - 1)] + [run[-1]])


def bigram_text(text: str) -> str:
    return CJK_RUN.sub(lambda m: f" {_bigram_run(m.group())} ", text)


def index_text(index: str, content: str | None, tool_calls: str | None) -> str:
    """The SQL function behind the triggers: never raises, whatever the row holds."""
    try:
        raw = search_text(content, tool_calls)
        if index == "words":
            return word_text(raw)
        if index == "bigram":
            return bigram_text(raw)
        return raw
    except Exception:  # a trigger must never fail a write; an unindexable row is still stored
        return content or ""


@lru_cache(maxsize=65_536)
def fold_char(ch: str) -> str:
    """One character, case- and diacritic-folded, always one character long."""
    base = unicodedata.normalize("NFD", ch)[0]
    lowered = base.lower()
    return lowered if len(lowered) == 1 else base


def fold(text: str) -> str:
    """Position-preserving fold: ``fold(t)[i]`` corresponds to ``t[i]``."""
    if text.isascii():
        return text.lower()  # same length, same positions
    return "".join(map(fold_char, text))
