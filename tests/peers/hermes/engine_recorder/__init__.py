"""A context engine for the test suite: Hermes's own ``ContextCompressor`` (so compaction is
exactly the built-in one) registered as a plugin engine named ``engine-recorder``, writing one
JSON line per call Hermes makes on it -- ``on_session_start``/``end``/``reset``,
``update_model``, ``compress`` (with its ``focus_topic``, ``force``, ``current_tokens``) and
each ``should_compress`` that said yes -- to ``$HERMES_HOME/engine-calls.jsonl``.

It shows, for each way of driving Hermes, which calls a context-engine plugin gets, and proves
the plugin engine is the one in use: Hermes deep-copies the registered engine for each agent
and falls back to the built-in compressor, with a warning only, when the copy fails. Installed
into a home by ``tests/hermes_peer.py`` (``HermesHome.record_engine_calls``); it runs inside
Hermes's own virtualenv, never the service's.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

from agent.context_compressor import ContextCompressor

NAME = "engine-recorder"
_write = threading.Lock()  # module state: not copied with the engine
# Every engine recorded, kept alive: an engine's id names it, and a copy Hermes let go would
# otherwise free its id for the next copy (two copies would look like one).
_recorded: list[Any] = []


def _record(call: str, engine: Any, **fields: Any) -> None:
    home = os.environ.get("HERMES_HOME", ".")
    line = {
        "call": call,
        "pid": os.getpid(),
        "engine": id(engine),
        "at": time.time(),
        **fields,
    }
    with _write, open(os.path.join(home, "engine-calls.jsonl"), "a", encoding="utf-8") as out:
        _recorded.append(engine)
        out.write(json.dumps(line, default=str) + "\n")


class RecordingCompressor(ContextCompressor):
    @property
    def name(self) -> str:
        return NAME

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        _record("on_session_start", self, session_id=session_id, **kwargs)
        super().on_session_start(session_id, **kwargs)

    def on_session_end(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        _record("on_session_end", self, session_id=session_id, messages=len(messages or []))
        super().on_session_end(session_id, messages)

    def on_session_reset(self) -> None:
        _record("on_session_reset", self)
        super().on_session_reset()

    def update_model(self, model: str, context_length: int, *args: Any, **kwargs: Any) -> None:
        _record("update_model", self, model=model, context_length=context_length)
        super().update_model(model, context_length, *args, **kwargs)

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        answer = super().should_compress(prompt_tokens)
        if answer:
            _record("should_compress", self, prompt_tokens=prompt_tokens)
        return answer

    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[dict[str, Any]]:
        _record(
            "compress",
            self,
            messages=len(messages),
            current_tokens=current_tokens,
            focus_topic=focus_topic,
            force=force,
            memory_context=bool(memory_context),
        )
        return super().compress(
            messages,
            current_tokens=current_tokens,
            focus_topic=focus_topic,
            force=force,
            memory_context=memory_context,
        )


def register(ctx: Any) -> None:
    ctx.register_context_engine(RecordingCompressor(model=""))
