"""Context windows of well-known models, so a gateway need not declare them.

Matched by the longest name fragment contained in the model name (provider prefixes such as
``openrouter/anthropic/`` are ignored). Unknown models take the session's declared window, else the
configured ``server.default_context_window``.
"""

from __future__ import annotations

KNOWN_CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-3.5-turbo": 16_385,
    "gpt-4": 8_192,
    "gpt-4-32k": 32_768,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.5": 128_000,
    "gpt-5": 400_000,
    "gpt-5.3-codex-spark": 128_000,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
    "gpt-oss": 131_072,
    "claude-3": 200_000,
    "claude-3-5": 200_000,
    "claude-3-7": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-opus-4": 200_000,
    "claude-haiku-4": 200_000,
    "gemini-1.5-pro": 2_097_152,
    "gemini-1.5-flash": 1_048_576,
    "gemini-2.0-flash": 1_048_576,
    "gemini-2.5-pro": 1_048_576,
    "gemini-2.5-flash": 1_048_576,
    "gemini-3": 1_048_576,
    "deepseek-chat": 128_000,
    "deepseek-reasoner": 128_000,
    "deepseek-r1": 128_000,
    "deepseek-v3": 128_000,
    "qwen2.5": 131_072,
    "qwen3": 131_072,
    "qwq": 131_072,
    "glm-4.5": 131_072,
    "glm-4.6": 200_000,
    "kimi-k2": 262_144,
    "llama-3.1": 131_072,
    "llama-3.3": 131_072,
    "llama-4": 1_048_576,
    "mistral-large": 131_072,
    "grok-4": 256_000,
}


def _bare(model: str) -> str:
    return model.strip().lower().rsplit("/", 1)[-1]


def known_context_window(model: str) -> int | None:
    """The window of the longest catalogue entry that ``model`` starts with, else None."""
    name = _bare(model)
    if not name:
        return None
    matches = [key for key in KNOWN_CONTEXT_WINDOWS if name.startswith(key)]
    if not matches:
        return None
    return KNOWN_CONTEXT_WINDOWS[max(matches, key=len)]
