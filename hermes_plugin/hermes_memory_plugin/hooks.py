"""Hermes's plugin hooks the engine cannot do without: the engine never sees Hermes's working
list between compressions, the hooks do.

- ``pre_api_request`` (before every model call, with everything so far: the user's message, the
  assistant's tool calls and their results) mirrors what is new, with the usage of the call that
  produced it, and reads the service's decision back;
- ``post_llm_call`` (end of a turn) mirrors the final reply;
- ``api_request_error`` reports the model's error to the service (``POST /model_error``).

Hermes's background review fork shares its parent's session id but talks in its own thread
under a tool whitelist; its requests are not the conversation and are never mirrored.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from . import settings as settings_module
from . import sync

log = logging.getLogger("hermes_memory_plugin")
ENGINE = "hermes-memory"
_CODE = re.compile(r"""['"]code['"]\s*:\s*['"]([A-Za-z0-9_.-]+)['"]""")
REVIEW_PREFIXES = (
    "Review the conversation above and update the skill library",
    "Review the conversation above and consider saving to memory",
)


def active() -> bool:
    """The plugin acts only for a Hermes whose config selects its engine."""
    try:
        from hermes_cli.config import load_config_readonly

        context = (load_config_readonly() or {}).get("context") or {}
        return isinstance(context, dict) and context.get("engine") == ENGINE
    except Exception:
        return False


def is_fork(user_message: Any = None) -> bool:
    """A background review (or any other fork Hermes runs under a thread tool whitelist)."""
    try:
        from hermes_cli import plugins

        if getattr(plugins._thread_tool_whitelist, "allowed", None) is not None:
            return True
    except Exception:  # noqa: S110 - an older Hermes without it: the prefixes still tell
        pass
    text = user_message if isinstance(user_message, str) else ""
    return text.lstrip().startswith(REVIEW_PREFIXES)


def _system_prompt(request_messages: Any) -> str | None:
    if isinstance(request_messages, list) and request_messages:
        first = request_messages[0]
        if isinstance(first, dict) and first.get("role") == "system":
            content = first.get("content")
            return content if isinstance(content, str) else None
    return None


def _mirror(kwargs: dict[str, Any], when: str, *, system_prompt: str | None = None) -> None:
    """Mirror the conversation a hook was given; whatever happens, the turn goes on."""
    if not active() or is_fork(kwargs.get("user_message")):
        return
    history = kwargs.get("conversation_history")
    if not isinstance(history, list):
        return
    try:
        sync.mirror(
            settings_module.load(),
            str(kwargs.get("session_id") or ""),
            history,
            model=str(kwargs.get("model") or ""),
            system_prompt=system_prompt,
        )
    except Exception as error:
        log.warning("hermes-memory: mirroring %s failed: %s", when, error)


def pre_api_request(**kwargs: Any) -> None:
    _mirror(
        kwargs,
        "before the model call",
        system_prompt=_system_prompt(kwargs.get("request_messages")),
    )


def post_llm_call(**kwargs: Any) -> None:
    _mirror(kwargs, "the turn's reply")


def api_request_error(**kwargs: Any) -> None:
    """Only HTTP errors the model answered (a 4xx other than auth) can be about the context; a
    refused connection or a 5xx is Hermes's to retry."""
    status = kwargs.get("status_code")
    if not isinstance(status, int) or not (400 <= status < 500) or status in (401, 402, 403):
        return
    if not active() or is_fork():
        return
    error = kwargs.get("error")
    if not isinstance(error, dict):
        error = {}
    message = str(error.get("message") or "")
    code = _CODE.search(message)  # the provider's error code, as the SDK's message quotes it
    try:
        sync.report_model_error(
            settings_module.load(),
            str(kwargs.get("session_id") or ""),
            status=status,
            message=message,
            code=code.group(1) if code else None,
            kind=str(error.get("type")) if error.get("type") else None,
        )
    except Exception as error_:
        log.warning("hermes-memory: reporting the model error failed: %s", error_)
