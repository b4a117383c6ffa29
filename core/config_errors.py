"""Configuration errors a person can act on: every bad key named with what is allowed there,
and secrets never echoed (start-up output ends up in logs)."""

from __future__ import annotations

import difflib
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
        near = nearest(str(error["loc"][-1]), parent, schema_keys)
        guess = f" (did you mean `{near}`?)" if near else ""
        return f"{location}: unknown key{guess}{hint}"
    got = error.get("input")
    shown = repr(got) if not isinstance(got, dict) else "a mapping"
    if str(error["loc"][-1]) in SECRET_KEYS:
        shown = "a value not shown here"  # start-up output ends up in logs
    return f"{location}: {error['msg']} (got {shown})"


def nearest(key: str, parent: str, schema_keys: dict[str, list[str]]) -> str | None:
    """The allowed key most like a misspelt ``key``, as a dotted path: first among its
    siblings, then anywhere (a key put in the wrong section)."""
    here = difflib.get_close_matches(key, schema_keys.get(parent, []), n=1, cutoff=0.75)
    if here:
        return f"{parent}.{here[0]}" if parent else here[0]
    everywhere = {
        name: f"{block}.{name}" if block else name
        for block, names in schema_keys.items()
        for name in names
        if block != parent
    }
    found = difflib.get_close_matches(key, list(everywhere), n=1, cutoff=0.85)
    return everywhere[found[0]] if found else None


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
