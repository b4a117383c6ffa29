"""The demo conversations, as data: JSON Lines files beside this module, loaded by
``manage.py setup_demo``. The first line of a file is the session (``title``, ``model``,
``system_prompt``, and for the long one ``needles``), every further line one message in OpenAI's
format.

``crumb.jsonl`` is one long conversation (580 messages) between a user and a coding agent who
build and debug a small Django shop over two weeks, in English, Chinese and a little Japanese
and Korean, with tool calls whose results are sometimes several kilobytes long.
``backup.jsonl`` is a short second session (a nightly Postgres backup script), so that search
across sessions has something to find. ``DEMO_NEEDLES`` are memorable strings from early in the
long one: after a compression they live only in archived rows.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


@cache
def _read(name: str) -> tuple[dict[str, Any], tuple[str, ...]]:
    with (HERE / f"{name}.jsonl").open(encoding="utf-8") as lines:
        header = json.loads(next(lines))
        messages = tuple(line for line in lines if line.strip())
    return header, messages


def load(name: str) -> dict[str, Any]:
    """One conversation: {"title", "model", "system_prompt", "messages"} (fresh dicts each call,
    so a caller may change them)."""
    header, messages = _read(name)
    return {
        "title": header["title"],
        "model": header["model"],
        "system_prompt": header["system_prompt"],
        "messages": [json.loads(line) for line in messages],
    }


def build_demo_conversation() -> dict[str, Any]:
    return load("crumb")


def build_small_conversation() -> dict[str, Any]:
    return load("backup")


DEMO_NEEDLES: list[str] = list(_read("crumb")[0]["needles"])
