"""The ``compression.hooks`` block: URLs told before and after a compaction (issue #19).

Its own module so ``config.py`` stays small; ``CompressionConfig.hooks`` holds one of these."""

from __future__ import annotations

import os
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from hermes_site.config_blocks import Block


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
                data = {**data, "secret": os.environ.get(name, "")}
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
                parts = urlsplit(url)
                if parts.scheme not in ("http", "https") or not parts.hostname:
                    raise ValueError(
                        f"{url!r} is not an http:// or https:// URL with a host "
                        "(e.g. https://hooks.example/pre-compact)"
                    )
            return tuple(value)
        return value

    @field_validator("secret")
    @classmethod
    def _secret_shape(cls, value: str) -> str:
        if value and len(value) < 16:
            raise ValueError(
                "expected at least 16 characters, such as the output of "
                "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
            )
        return value
