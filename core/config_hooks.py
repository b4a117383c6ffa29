"""The ``compression.hooks`` block: URLs told before and after a compaction (issue #19).

Its own module so ``config.py`` stays small; ``CompressionConfig.hooks`` holds one of these."""

from __future__ import annotations

import os
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from core.config_blocks import Block, token_shape


class HooksConfig(Block):
    """Where to POST a signed JSON payload before (``pre_compact``) and after (``post_compact``)
    a summarising compaction. Empty lists: no hooks, nothing is sent."""

    # Each a URL or a list of URLs (http or https). Pre-compact ones are called in turn, before
    # the summariser, and gate it when compression.checkpoint_required is true.
    pre_compact: tuple[str, ...] = ()
    post_compact: tuple[str, ...] = ()
    # HMAC-SHA256 key for the X-Hermes-Signature header; empty: deliveries go unsigned.
    secret: str = Field("", repr=False)
    # Or the name of an environment variable holding it (read at start-up when secret is empty).
    secret_env: str = ""
    # Send the span's rows (OpenAI-format messages) in the pre-compact payload.
    include_rows: bool = False
    # One delivery's bound (connect, send and answer together).
    timeout_seconds: Annotated[float, Field(gt=0, le=30)] = 5
    # Post-compact deliveries that fail are tried again this many times, waiting
    # retry_backoff_seconds, then twice that, and so on.
    post_compact_retries: Annotated[int, Field(ge=0, le=10)] = 3
    retry_backoff_seconds: Annotated[float, Field(ge=0, le=60)] = 2

    @model_validator(mode="before")
    @classmethod
    def _secret_from_env(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("secret_env") and not data.get("secret"):
            name = data["secret_env"]
            if isinstance(name, str):
                if name not in os.environ:
                    raise ValueError(
                        f"secret_env names {name!r}, which is not set in the environment: "
                        "deliveries would go out unsigned"
                    )
                data = {**data, "secret": os.environ[name]}
        return data

    @field_validator("pre_compact", "post_compact", mode="before")
    @classmethod
    def _urls(cls, value: Any) -> Any:
        if value is None:
            return ()
        if isinstance(value, str):
            value = [value] if value.strip() else []
        if isinstance(value, list):
            for url in value:
                if not isinstance(url, str):
                    continue  # the schema names the wrong type
                if not _usable(url):
                    raise ValueError(
                        f"{url!r} is not an http:// or https:// URL with a host and, if any, a "
                        "port from 1 to 65535 (e.g. https://hooks.example/pre-compact)"
                    )
            return tuple(value)
        return value

    @field_validator("secret")
    @classmethod
    def _secret_shape(cls, value: str) -> str:
        return token_shape(value)


def _usable(url: str) -> bool:
    """What a connection can be opened to: http(s), a host that is a valid name or address
    (no spaces, labels of at most 63 characters), a numeric port in range."""
    try:
        parts = urlsplit(url)
        port = parts.port  # ValueError when not a number or out of range
        host = parts.hostname or ""
        host.encode("idna")  # UnicodeError for an empty or over-long label
    except (ValueError, UnicodeError):
        return False
    return (
        parts.scheme in ("http", "https")
        and bool(host)
        and not any(c.isspace() for c in url)
        and port != 0
    )
