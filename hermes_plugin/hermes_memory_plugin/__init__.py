"""hermes-memory: a Hermes Agent plugin that hands the conversation's context to a Hermes
Memory service. Enable with ``hermes plugins enable hermes-memory`` and select the engine with
``context: {engine: hermes-memory}`` plus a ``hermes_memory:`` block (``url``, ``key``) in
``config.yaml``; see README.md."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def register(ctx: Any) -> None:
    """Hermes's plugin entry point (group ``hermes_agent.plugins``)."""
    from . import hooks
    from .engine import HermesMemoryEngine

    ctx.register_context_engine(HermesMemoryEngine())
    ctx.register_hook("pre_api_request", hooks.pre_api_request)
    ctx.register_hook("post_llm_call", hooks.post_llm_call)
    ctx.register_hook("api_request_error", hooks.api_request_error)
