"""How much of a span a summary still carries: a deterministic, local score (no model call).

From the span a summary replaces, take its salient items -- identifiers, file paths, URLs,
emails, numbers with units, versions, error codes, quoted strings, and CJK terms that recur --
rank them (how often they occur, weighted by kind: an error code or a URL outweighs one more
identifier), keep the top ``MAX_ITEMS``, and count how many of them the summary, the protected
head and the tail still hold. Matching ignores case and spaces ("120 ms" is "120ms").

This service keeps every original, so it can check what a summary dropped; the score is stored
on the compression event with the items missed, shown in the console, and exported as a
histogram. It measures carried *strings*, not understanding: a summary that paraphrases
``ECONNREFUSED`` as "the connection was refused" loses the item. That is deliberate: the
identifiers, paths and codes are what a model continuing the work cannot guess.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from core.config import get_config
from sessions_app.models import Message

MAX_ITEMS = 80  # the most salient items of a span are scored; a long span has thousands
MISSED_KEPT = 25  # the missed items stored on the event (most salient first)
SCAN_CHARS = 1_000_000  # a longer span is read in evenly spaced rows up to this much text

_A = r"A-Za-z0-9_"  # ASCII word characters: Python's \w and \b treat CJK as word characters
_UNITS = (
    r"ms|us|µs|ns|s|sec|secs|seconds?|min|mins|minutes?|h|hrs?|hours?|days?|weeks?|"
    r"B|KB|MB|GB|TB|KiB|MiB|GiB|TiB|kB|bytes|%|px|tokens?|rows|lines|files|req/s|rps|qps|"
    r"GHz|MHz|cores?|x"
)
_CJK_UNITS = r"元|块|个|条|次|秒|毫秒|分钟|小时|天|行|倍|人|台|页|字"
PATTERNS: tuple[tuple[str, float, re.Pattern[str]], ...] = (
    ("url", 2.0, re.compile(r"https?://[^\s<>\"'`\]\)\uff09\u300d\uff0c\u3002]+")),
    ("email", 2.0, re.compile(rf"(?<![{_A}.+-])[{_A}.%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")),
    (
        "path",
        2.0,
        re.compile(
            # /abs/olute/paths, ~/x/y, ./x/y; and relative ones that end in a file name
            rf"(?<![{_A}/.:-])(?:~|\.{{1,2}})?(?:/[{_A}.@+-]+){{2,}}/?"
            rf"|(?<![{_A}/.:-])(?:[{_A}.-]+/)*[{_A}-]+\.(?:py|js|ts|tsx|jsx|go|rs|java|rb|"
            r"php|c|h|cpp|cs|kt|swift|yaml|yml|json|toml|md|conf|cfg|ini|sql|sh|html|css|txt|"
            rf"log|lock|env|xml|csv|proto|tf)(?![{_A}])"
        ),
    ),
    (
        "error",
        3.0,
        re.compile(
            rf"(?<![{_A}])(?:[A-Z][A-Za-z0-9]*(?:Error|Exception|Exit|Fault)"
            rf"|E[A-Z]{{4,}}|(?:E|ERR|ORA|PG|SQLSTATE|CVE)[-_ ]?\d[\d-]{{2,9}}"
            rf"|(?:HTTP|status|code) ?[1-5]\d\d)(?![{_A}])"
        ),
    ),
    (
        "version",
        2.0,
        re.compile(rf"(?<![{_A}.])v?\d+\.\d+(?:\.\d+){{1,3}}(?:-[A-Za-z0-9.]+)?(?![{_A}]|\.\d)"),
    ),
    (
        "number",
        1.0,
        re.compile(rf"(?<![{_A}.])\d+(?:[.,]\d+)*\s?(?:(?:{_UNITS})(?![A-Za-z])|(?:{_CJK_UNITS}))"),
    ),
    (
        "quoted",
        1.5,
        # (a double-quoted string followed by a colon is a JSON key, not a quotation)
        re.compile(
            r"`([^`\n]{2,80})`|\"([^\"\n]{3,80})\"(?!\s*:)|「([^」\n]{2,40})」|“([^”\n]{2,80})”"
        ),
    ),
    (
        "identifier",
        1.0,
        re.compile(
            # snake_case, camelCase, dotted.names and hex ids of 7+ characters with a digit
            rf"(?<![{_A}.-])(?:[A-Za-z][{_A}]*_[{_A}]+|[a-z]+[A-Z][A-Za-z0-9]+"
            rf"|[A-Za-z_][{_A}]*(?:\.[A-Za-z_][{_A}]*){{2,}}"
            rf"|(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{{7,40}})(?![{_A}])"
        ),
    ),
)
_NEEDS = {"url": "://", "email": "@"}  # a kind cannot occur in a text without these
_MASK = re.compile(r"\[REDACTED:[a-z_]+\]")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]{2,}")
# Characters that make a CJK n-gram grammar rather than a term (particles, pronouns, copulas).
_CJK_STOP = set("的了是在我你他她它们这那有和就不也都要会对说把被给让从到里而与及或吗呢吧啊")
CJK_WEIGHT = 1.0
CJK_MIN_COUNT = 3
CJK_MAX_CHARS = 6


@dataclass(frozen=True)
class Item:
    kind: str
    text: str
    weight: float

    @property
    def key(self) -> str:
        return normalise(self.text)


@dataclass
class Score:
    items: int
    kept: int
    missed: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        """Nothing salient to lose is nothing lost."""
        return 1.0 if not self.items else self.kept / self.items

    def describe(self) -> str:
        text = f"kept {self.kept} of {self.items} salient items"
        if self.missed:
            text += "; missed: " + ", ".join(self.missed[:8])
        return text


def normalise(text: str) -> str:
    return "".join(text.casefold().split())


def salient_items(texts: Iterable[str], limit: int = MAX_ITEMS) -> list[Item]:
    """The span's most salient items, most salient first."""
    counts: Counter[str] = Counter()
    first: dict[str, Item] = {}
    order: dict[str, int] = {}
    body = [_MASK.sub(" ", text) for text in texts if text]
    for text in body:
        taken: list[tuple[int, int]] = []
        for kind, weight, pattern in PATTERNS:
            needed = _NEEDS.get(kind)
            if needed and needed not in text:
                continue  # the cheap test first: no "@", no email
            for match in pattern.finditer(text):
                start, end = match.span()
                if any(s <= start and end <= e for s, e in taken):
                    continue  # inside a URL or a path already taken ("/a/b.py" in a URL)
                value = next((g for g in match.groups() if g), None) or match.group(0)
                value = value.strip().rstrip(".,;:!?")
                if len(value) < 3:
                    continue
                taken.append((start, end))
                key = normalise(value)
                counts[key] += 1
                if key not in first:
                    first[key] = Item(kind, value, weight)
                    order[key] = len(order)
    for term, n in _cjk_terms(body).items():
        key = normalise(term)
        if key not in first:
            counts[key] += n
            first[key] = Item("term", term, CJK_WEIGHT)
            order[key] = len(order)
    ranked = sorted(first, key=lambda k: (-counts[k] * first[k].weight, order[k]))
    return [first[k] for k in ranked[:limit]]


def _cjk_terms(texts: list[str]) -> Counter[str]:
    """CJK n-grams (2 to 6 characters) that occur CJK_MIN_COUNT times or more, with no stop
    character, and not inside a longer one that occurs as often ("数据库" rather than "数据"
    when every "数据" is part of it)."""
    grams: Counter[str] = Counter()
    for text in texts:
        for run in _CJK_RUN.findall(text):
            for n in range(2, CJK_MAX_CHARS + 1):
                for i in range(len(run) - n + 1):
                    gram = run[i : i + n]
                    if not _CJK_STOP.intersection(gram):
                        grams[gram] += 1
    frequent = {g: n for g, n in grams.items() if n >= CJK_MIN_COUNT}
    within: dict[str, int] = {}  # a gram -> the highest count of a longer gram holding it
    for gram, n in frequent.items():
        for size in range(2, len(gram)):
            for i in range(len(gram) - size + 1):
                part = gram[i : i + size]
                within[part] = max(within.get(part, 0), n)
    return Counter({g: n for g, n in frequent.items() if within.get(g, 0) < n})


def score(span: Iterable[str], carried: Iterable[str], limit: int = MAX_ITEMS) -> Score:
    """``span``: the replaced rows' text (masked, as the summariser saw it); ``carried``: the
    summary's text and the head's, pinned rows' and tail's."""
    items = salient_items(span, limit)
    haystack = normalise("\n".join(carried))
    missed = [item.text for item in items if not _carried(item, haystack)]
    return Score(items=len(items), kept=len(items) - len(missed), missed=missed[:MISSED_KEPT])


def _carried(item: Item, haystack: str) -> bool:
    if item.key in haystack:
        return True
    # A path is carried by its file name ("settings.py" for /srv/app/config/settings.py).
    if item.kind == "path":
        name = item.key.rstrip("/").rsplit("/", 1)[-1]
        return len(name) >= 5 and name in haystack
    return False


def row_text(message: Message) -> str:
    """What of a row is scored: its text and its tool calls' names and arguments."""
    parts = [message.content or ""]
    for call in message.tool_calls or ():
        function = call.get("function") or {}
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        parts.append(f"{function.get('name', '')} {arguments}")
    return "\n".join(p for p in parts if p)


def score_rows(span: list[Message], summary: str, carried: Iterable[Message]) -> Score:
    """A summary of ``span`` (the masked rows the summariser was given), with ``carried`` the
    rows that stay live beside it (the head, pinned rows, the tail)."""
    texts = sample([row_text(m) for m in span])
    return score(texts, [summary, *(row_text(m) for m in carried)])


def event_fields(scored: Score) -> dict[str, Any]:
    """The compression event's columns for a score, flagged under ``compression.scoring.floor``."""
    floor = get_config().compression.scoring.floor
    return {
        "retention": round(scored.ratio, 4),
        "salient_items": scored.items,
        "salient_kept": scored.kept,
        "salient_missed": scored.missed,
        "below_floor": bool(floor) and scored.ratio < floor,
    }


def sample(texts: list[str], budget: int = SCAN_CHARS) -> list[str]:
    """At most about ``budget`` characters of ``texts``, in rows spaced evenly across them: a
    huge span is scored over the whole of it, not its first megabyte."""
    total = sum(len(t) for t in texts)
    if total <= budget:
        return texts
    step = total / budget
    return texts[:: max(1, round(step))]
