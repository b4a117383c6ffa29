"""One rule for every JSON body the API stores from: no string in it, key or value, at any
depth, holds NUL (U+0000). PostgreSQL cannot store one, and a rule that held on one backend
only would let a SQLite instance accept what its PostgreSQL restore then refuses.

The rule is checked once, on the body as sent, so the answer names the exact place; and
:func:`state_in_schema` writes it into the OpenAPI schema (a ``pattern`` on every string,
``propertyNames`` on every object), so a generated client does not send what is refused.
"""

from __future__ import annotations

from typing import Any

from ninja.errors import ValidationError
from pydantic import BaseModel, model_validator

NUL = "\x00"
# JSON Schema's pattern for "no NUL" (ECMA 262 regex, as OpenAPI reads it).
NO_NUL = "^[^\\u0000]*$"
NUL_MESSAGE = "contains a NUL character (U+0000), which cannot be stored; remove it"
STORABLE = "StorableJSON"


def nul_at(value: Any, where: tuple = ()) -> tuple | None:
    """The path to the first string holding NUL (a key's path ends at that key), or None."""
    if isinstance(value, str):
        return where if NUL in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and NUL in key:
                return (*where, key)
            found = nul_at(item, (*where, key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for n, item in enumerate(value):
            found = nul_at(item, (*where, n))
            if found is not None:
                return found
    return None


class StorableBody(BaseModel):
    """Mixed into a schema that is a whole request body (not into the schemas inside it: the
    root's check already reads every level)."""

    @model_validator(mode="before")
    @classmethod
    def _no_nul(cls, data: Any) -> Any:
        where = nul_at(data)
        if where is not None:
            # The API's own error, raised through pydantic, so the answer's location is the
            # string's own path rather than the model's root.
            raise ValidationError(
                [{"loc": ("body", *where), "msg": NUL_MESSAGE, "type": "nul_character"}]
            )
        return data


def _storable_json() -> dict:
    """Any JSON value whose strings hold no NUL: what a free-form part of a body may carry."""
    ref = {"$ref": f"#/components/schemas/{STORABLE}"}
    return {
        "description": "Any JSON value; no string in it, key or value, may contain NUL (U+0000).",
        "anyOf": [
            {"type": "null"},
            {"type": "boolean"},
            {"type": "number"},
            {"type": "string", "pattern": NO_NUL},
            {"type": "array", "items": ref},
            {
                "type": "object",
                "additionalProperties": ref,
                "propertyNames": {"pattern": NO_NUL},
            },
        ],
    }


def _state(node: Any, components: dict, seen: set[str]) -> None:
    if isinstance(node, list):
        for item in node:
            _state(item, components, seen)
        return
    if not isinstance(node, dict):
        return
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
        name = ref.rsplit("/", 1)[-1]
        if name not in seen and name in components:
            seen.add(name)
            _state(components[name], components, seen)
        return
    kind = node.get("type")
    if kind == "string" and "const" not in node and "enum" not in node and "format" not in node:
        if "pattern" not in node:
            node["pattern"] = NO_NUL
        elif node["pattern"] != NO_NUL:
            node.setdefault("allOf", []).append({"pattern": NO_NUL})
    if kind == "object" or "properties" in node:
        node.setdefault("propertyNames", {"pattern": NO_NUL})
        if node.get("additionalProperties") in (True, {}):
            node["additionalProperties"] = {"$ref": f"#/components/schemas/{STORABLE}"}
    for key, child in node.items():
        if key not in ("const", "enum", "default", "examples", "example", "propertyNames"):
            _state(child, components, seen)


def state_in_schema(schema: dict, *, exempt: frozenset[str] = frozenset()) -> dict:
    """Write the rule into every request body of an OpenAPI schema, except the bodies of the
    operations named in ``exempt`` (their own answers say what they refuse)."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    seen: set[str] = set()
    for methods in schema.get("paths", {}).values():
        for operation in methods.values():
            if not isinstance(operation, dict) or operation.get("operationId") in exempt:
                continue
            for content in operation.get("requestBody", {}).get("content", {}).values():
                _state(content.get("schema"), components, seen)
    components[STORABLE] = _storable_json()
    return schema
