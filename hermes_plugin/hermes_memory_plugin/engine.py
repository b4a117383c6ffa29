"""The context engine Hermes selects with ``context: {engine: hermes-memory}``.

Hermes deep-copies the registered engine for every agent (and silently falls back to its own
compressor if the copy raises), so the instance holds plain values only: its Hermes session id
and the token counters Hermes reads. Everything else is on disk (``store.py``) or fetched.
Deciding is the service's: ``should_compress`` answers what the service last said.
"""

from __future__ import annotations

import logging
from typing import Any

from agent.context_engine import ContextEngine

from . import settings as settings_module
from . import sync

log = logging.getLogger("hermes_memory_plugin")
NAME = "hermes-memory"
RECALL = settings_module.RECALL_TOOL

RECALL_SCHEMA: dict[str, Any] = {
    "name": RECALL,
    "description": (
        "Search every message of this conversation ever said, including the originals that "
        "were summarised away (the summary names their positions, e.g. '#12-#480'). Use it "
        'when a detail from earlier is not in view: give a query (words, a "phrase", '
        "prefix*), or around=<position> to read the messages at and around a hit. "
        "scope='channel' searches every conversation of this channel."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for."},
            "scope": {
                "type": "string",
                "enum": ["session", "channel"],
                "description": "This conversation (default) or every one of the channel.",
            },
            "around": {
                "type": "integer",
                "description": "A message position: read the messages around it instead.",
            },
            "limit": {"type": "integer", "minimum": 1, "maximum": 20},
        },
    },
}


class HermesMemoryEngine(ContextEngine):
    """Hands Hermes's context to a Hermes Memory service."""

    threshold_percent = 0.75

    def __init__(self) -> None:
        self.session_id = ""

    @property
    def name(self) -> str:
        return NAME

    # -- tokens: Hermes reads these; the service is told in the next mirrored batch ----------
    def update_from_response(self, usage: dict[str, Any]) -> None:
        usage = usage or {}
        self.last_prompt_tokens = int(usage.get("prompt_tokens") or 0)
        self.last_completion_tokens = int(usage.get("completion_tokens") or 0)
        self.last_total_tokens = int(usage.get("total_tokens") or 0)
        try:
            sync.record_usage(settings_module.load(), self.session_id, usage)
        except Exception as error:  # never the turn's problem
            log.warning("hermes-memory: recording usage failed: %s", error)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        try:
            return sync.wants_compression(settings_module.load(), self.session_id)
        except Exception as error:
            log.warning("hermes-memory: asking whether to compress failed: %s", error)
            return False

    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[dict[str, Any]]:
        try:
            result = sync.compress(
                settings_module.load(),
                self.session_id,
                messages,
                focus=focus_topic,
                force=force,
                memory_context=memory_context or "",
            )
        except Exception as error:
            log.warning("hermes-memory: compressing failed, context left as it is: %s", error)
            result = None
        if result is None:
            return messages
        self.compression_count += 1
        return result

    # -- recall --------------------------------------------------------------------------------
    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [RECALL_SCHEMA]

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        if name != RECALL:
            return super().handle_tool_call(name, args, **kwargs)
        try:
            return sync.recall(settings_module.load(), self.session_id, args or {})
        except Exception as error:
            log.warning("hermes-memory: recall failed: %s", error)
            return sync._error(f"recall failed: {error}")

    # -- lifecycle -----------------------------------------------------------------------------
    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        old = kwargs.get("old_session_id") if kwargs.get("boundary_reason") else None
        self.session_id = session_id or self.session_id
        try:
            sync.begin(
                settings_module.load(),
                self.session_id,
                model=str(kwargs.get("model") or ""),
                context_length=int(kwargs.get("context_length") or self.context_length or 0),
                old_id=old,
            )
        except Exception as error:
            log.warning("hermes-memory: starting session %s: %s", session_id, error)

    def update_model(
        self,
        model: str,
        context_length: int,
        base_url: str = "",
        api_key: str = "",
        provider: str = "",
        api_mode: str = "",
    ) -> None:
        super().update_model(model, context_length, base_url, api_key, provider, api_mode)
        if self.session_id:
            sync.begin(
                settings_module.load(), self.session_id, model=model, context_length=context_length
            )
