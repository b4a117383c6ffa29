"""The plugin's settings: the ``hermes_memory:`` block of Hermes's ``config.yaml``.

Read through Hermes's own loader when it is importable (so ``${VAR}`` references are expanded
the way Hermes expands every other value), with ``HERMES_MEMORY_URL`` / ``HERMES_MEMORY_KEY``
as fallbacks. Read on every use, never kept in the engine: Hermes deep-copies the engine per
agent, and a long-lived gateway should see an edited config without a restart.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCOPES = ("session", "channel")
# The recall tool's name: the service's summaries and notices name it (Hermes's own
# session_search searches Hermes's store, and a second tool of that name would be dropped).
RECALL_TOOL = "memory_recall"


@dataclass(frozen=True)
class Settings:
    """``url`` is the service's address (``/api/v1`` is added when missing); ``key`` a channel
    key. ``timeout`` bounds every call a turn waits for; ``compress_timeout`` a compression
    (which waits for the summariser); after a failed call the service is left alone for
    ``retry_seconds`` so that a service that hangs costs a turn one ``timeout`` at most."""

    url: str = ""
    key: str = ""
    timeout: float = 3.0
    compress_timeout: float = 60.0
    retry_seconds: float = 10.0
    scope: str = "session"
    home: Path = Path(".")

    @property
    def configured(self) -> bool:
        return bool(self.url and self.key and "${" not in self.url + self.key)

    @property
    def api(self) -> str:
        base = self.url.rstrip("/")
        return base if base.endswith("/api/v1") else f"{base}/api/v1"

    @property
    def state_dir(self) -> Path:
        return self.home / "hermes-memory"


def hermes_home() -> Path:
    try:
        from hermes_constants import get_hermes_home

        return Path(get_hermes_home())
    except Exception:
        return Path(os.environ.get("HERMES_HOME") or Path.home() / ".hermes")


def _hermes_config() -> dict[str, Any]:
    try:
        from hermes_cli.config import load_config_readonly

        config = load_config_readonly()
        return config if isinstance(config, dict) else {}
    except Exception:
        return {}


def _number(value: Any, default: float, low: float, high: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return min(max(number, low), high)


def from_mapping(block: Any, home: Path) -> Settings:
    """Settings from a ``hermes_memory:`` mapping (bad values fall back to the defaults)."""
    block = block if isinstance(block, dict) else {}
    scope = str(block.get("scope") or "session")
    return Settings(
        url=str(block.get("url") or os.environ.get("HERMES_MEMORY_URL") or "").strip(),
        key=str(block.get("key") or os.environ.get("HERMES_MEMORY_KEY") or "").strip(),
        timeout=_number(block.get("timeout_seconds"), 3.0, 0.1, 60),
        compress_timeout=_number(block.get("compress_timeout_seconds"), 60.0, 1, 3600),
        retry_seconds=_number(block.get("retry_seconds"), 10.0, 0, 3600),
        scope=scope if scope in SCOPES else "session",
        home=home,
    )


def load() -> Settings:
    return from_mapping(_hermes_config().get("hermes_memory"), hermes_home())
