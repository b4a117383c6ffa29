"""Configuration errors a person can act on: every bad key named with what is allowed there,
and secrets never echoed (start-up output ends up in logs)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

SECRET_KEYS = frozenset({"metrics_token", "secret_key", "api_key", "secret"})


def describe(error: Mapping[str, Any], schema_keys: dict[str, list[str]]) -> str:
    location = ".".join(str(part) for part in error["loc"]) or "(top level)"
    kind = error["type"]
    if kind == "extra_forbidden":
        parent = ".".join(str(part) for part in error["loc"][:-1])
        allowed = schema_keys.get(parent)
        hint = f"; allowed keys here: {', '.join(allowed)}" if allowed else ""
        return f"{location}: unknown key{hint}"
    got = error.get("input")
    shown = repr(got) if not isinstance(got, dict) else "a mapping"
    if str(error["loc"][-1]) in SECRET_KEYS:
        shown = "a value not shown here"  # start-up output ends up in logs
    return f"{location}: {error['msg']} (got {shown})"


def schema_keys(root: type[BaseModel]) -> dict[str, list[str]]:
    """Allowed keys per dotted block path, for 'unknown key' messages."""
    keys: dict[str, list[str]] = {}

    def walk(model: type[BaseModel], prefix: str) -> None:
        keys[prefix] = sorted(model.model_fields)
        for name, field in model.model_fields.items():
            annotation = field.annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                walk(annotation, f"{prefix}.{name}" if prefix else name)

    walk(root, "")
    return keys
