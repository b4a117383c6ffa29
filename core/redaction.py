"""Masking known secret shapes before text leaves the service (``compression.redaction``).

What goes to a summariser, a compaction hook or a server that compacts is a copy; the stored
originals are never touched. A mask names the kind it replaced (``[REDACTED:aws_key]``) and
carries no character of the secret, and masking is idempotent, so text masked twice counts
once. The patterns avoid ``\\b`` and ``\\w``: in Python both treat CJK characters as word
characters, and a key pasted into Chinese prose (``密钥sk-…``) has no word boundary before it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

MASK = "[REDACTED:{kind}]"
_NOT_MASK = r"(?!\[REDACTED:)"

# Each name: its rules, (kind, pattern, the group to mask -- 0 for the whole match). Order
# matters: a PEM block first (it holds base64 that other shapes could nibble at), then
# credentials inside URLs and headers, then bare keys, then assignments.
BUILTIN: dict[str, tuple[tuple[str, str, int], ...]] = {
    "private_keys": (
        (
            "private_key",
            # A whole block; a block cut off before its END line (a clipped message) runs on as
            # long as its lines look like PEM (base64, and a legacy header's "Proc-Type: 4,…").
            r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----"
            r"(?:[\s\S]*?-----END \1-----|[A-Za-z0-9+/=\s:,.\\-]*)",
            0,
        ),
    ),
    "url_passwords": (
        (
            "url_password",
            r"(?i)(?<![A-Za-z0-9+.-])[a-z][a-z0-9+.-]{1,30}://[^\s:/@\"'<>]+:"
            + _NOT_MASK
            + r"([^\s@/\"'<>]+)@",
            1,
        ),
    ),
    "bearer": (
        (
            "bearer_token",
            r"(?i)authorization\s*[:=]\s*[\"']?\s*(?:bearer|token|basic)\s+"
            + _NOT_MASK
            + r"([A-Za-z0-9._~+/=-]{8,})",
            1,
        ),
        (
            # "Bearer <token>" outside a header: a token has a digit ("bearer credentials"
            # in prose is not one).
            "bearer_token",
            r"(?<![A-Za-z])[Bb]earer\s+" + _NOT_MASK + r"(?=[A-Za-z._~+/=-]*[0-9])"
            r"([A-Za-z0-9._~+/=-]{12,})",
            1,
        ),
    ),
    "provider_keys": (
        (
            "api_key",
            r"(?<![A-Za-z0-9_-])(?:"
            r"sk-(?:proj-|ant-(?:api|admin)\d\d-|or-v1-|svcacct-)?[A-Za-z0-9_-]{20,}"
            r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"
            r"|glpat-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}"
            r"|AIza[0-9A-Za-z_-]{35}|hf_[A-Za-z0-9]{30,}|gsk_[A-Za-z0-9]{30,}"
            r"|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}|r8_[A-Za-z0-9]{30,}"
            r"|pplx-[A-Za-z0-9]{30,}|nvapi-[A-Za-z0-9_-]{30,}"
            r")",
            0,
        ),
    ),
    "aws_keys": (
        (
            "aws_key",
            r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA)[A-Z0-9]{16}(?![A-Z0-9])",
            0,
        ),
    ),
    "env_secrets": (
        (
            "secret_value",
            # NAME=value as in .env files, shell and YAML/JSON: names ending in KEY, TOKEN,
            # SECRET, or PASSWORD/PASSWD/PWD, quoted or not.
            r"(?i)(?<![A-Za-z0-9_])[\"']?[A-Za-z0-9_.-]*?(?:_KEY|_TOKEN|_SECRET|SECRET_KEY|"
            r"ACCESS_KEY|PASSWORD|PASSWD|_PWD|API_KEY|APIKEY|SECRET|TOKEN)[\"']?\s*(?::|=)\s*"
            + r"(?![\"']?\[REDACTED:)"
            + r"(\"[^\"\n]+\"|'[^'\n]+'|[^\s\"',;}\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]+)",
            1,
        ),
    ),
}
NAMES = tuple(BUILTIN)


# What a text must hold for a built-in rule to match, tested first: the rules themselves try a
# match at every position, and most text holds no secret (1 MB of tool output is masked in a
# fraction of the time with these).
PROBES: dict[str, str] = {
    "private_key": r"PRIVATE KEY",
    "url_password": r"://",
    "bearer_token": r"(?i)bearer|authorization",
    "api_key": r"sk-|gh[pousr]_|github_pat_|glpat-|xox|AIza|hf_|gsk_|_live_|_test_|r8_|pplx-"
    r"|nvapi-",
    "aws_key": r"A[A-Z]{3}[A-Z0-9]{16}",
    "secret_value": r"(?i)(?:key|token|secret|passw(?:or)?d|pwd)[\"']?\s*[:=]",
}


@dataclass(frozen=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]
    group: int
    probe: re.Pattern[str] | None = None


@dataclass
class Tally:
    """How many secrets of each kind were masked: what an event records, never the values."""

    counts: Counter[str] = field(default_factory=Counter)

    def add(self, other: Counter[str] | Tally) -> None:
        self.counts.update(other.counts if isinstance(other, Tally) else other)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def as_dict(self) -> dict[str, int]:
        return dict(sorted(self.counts.items()))


class Redactor:
    """The configured rules, compiled once; ``mask`` is a no-op when there are none."""

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules = tuple(rules)

    def mask(self, text: str, tally: Tally | None = None) -> str:
        if not text or not self.rules:
            return text
        for rule in self.rules:
            if rule.probe is not None and rule.probe.search(text) is None:
                continue
            text, n = _sub(rule, text)
            if n and tally is not None:
                tally.counts[rule.kind] += n
        return text

    def mask_value(self, value: Any, tally: Tally | None = None) -> Any:
        """Every string in a JSON-shaped value (keys stay: they are names, not secrets)."""
        if isinstance(value, str):
            return self.mask(value, tally)
        if isinstance(value, list):
            return [self.mask_value(v, tally) for v in value]
        if isinstance(value, dict):
            return {k: self.mask_value(v, tally) for k, v in value.items()}
        return value


def _sub(rule: Rule, text: str) -> tuple[str, int]:
    mask = MASK.format(kind=rule.kind)
    if rule.group == 0:
        return rule.pattern.subn(mask, text)

    def keep_around(match: re.Match[str]) -> str:
        start, end = match.span(rule.group)
        whole = match.group(0)
        offset = match.start()
        return whole[: start - offset] + mask + whole[end - offset :]

    return rule.pattern.subn(keep_around, text)


def compile_rules(names: Iterable[str], extra: dict[str, str]) -> list[Rule]:
    """Built-in rules by name (unknown names raise KeyError) and extra ones, ``kind: regex``
    (a ``secret`` group, if the regex has one, is what is masked; else the whole match)."""
    rules: list[Rule] = []
    for name in names:
        rules.extend(
            Rule(kind, re.compile(p), group, re.compile(PROBES[kind]))
            for kind, p, group in BUILTIN[name]
        )
    for kind, pattern in extra.items():
        compiled = re.compile(pattern)
        group = compiled.groupindex.get("secret", 0)
        rules.append(Rule(kind, compiled, group))
    return rules


@lru_cache(maxsize=8)
def _redactor(
    enabled: bool, names: tuple[str, ...], extra: tuple[tuple[str, str], ...]
) -> Redactor:
    return Redactor(compile_rules(names, dict(extra)) if enabled else ())


class Settings(Protocol):
    """What ``compression.redaction`` holds (core.config_blocks.RedactionConfig)."""

    @property
    def enabled(self) -> bool: ...
    @property
    def patterns(self) -> tuple[str, ...]: ...
    @property
    def extra_patterns(self) -> dict[str, str]: ...


def redactor(block: Settings) -> Redactor:
    """The redactor of a ``compression.redaction`` block, compiled once per setting."""
    return _redactor(block.enabled, block.patterns, tuple(sorted(block.extra_patterns.items())))
