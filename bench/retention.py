"""Summary scores on the committed regression set, and what scoring costs.

    .venv/bin/python bench/retention.py
    .venv/bin/python bench/retention.py --rows 20000     # a longer span for the cost table

For each span of ``tests/data/retention/`` (English, Chinese, tool-heavy): its salient items,
and the share of them each summary keeps -- the local fallback (compression.engine.fallback), the
loopback model's digest (the demo's summariser, asked through the openai SDK over HTTP exactly as
the engine asks a real model), and the baseline, measured in the same run: the span's own first
characters, cut to the fallback's length (what truncating instead of summarising keeps). A
prompt or fallback change shows its effect here as a change in these scores.

Then the cost: scoring, and masking (core.redaction), a synthetic tool-heavy span of ``--rows``
rows beside one pass of ``str.split`` over the same text (the least any reading of it costs). No
database is used.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hermes_site.settings")

import django  # noqa: E402

django.setup()

from compression.engine import prompt as prompts  # noqa: E402
from compression.engine import retention  # noqa: E402
from compression.engine.fallback import local_summary  # noqa: E402
from compression.engine.summarizer import summarize  # noqa: E402
from compression.testing.fake_model import Digest, FakeModelServer  # noqa: E402
from core.config import CompressionConfig, SummaryModelConfig  # noqa: E402
from core.redaction import NAMES, Redactor, compile_rules  # noqa: E402
from sessions_app.models import Message  # noqa: E402

REGRESSION = ROOT / "tests" / "data" / "retention"


def rows_of(path: Path) -> list[Message]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [
        Message(
            position=n,
            role=m["role"],
            content=m.get("content"),
            tool_calls=m.get("tool_calls"),
            name=m.get("name") or "",
            tool_call_id=m.get("tool_call_id") or "",
        )
        for n, m in enumerate(data["messages"], 1)
    ]


def scores(model: SummaryModelConfig) -> list[tuple[str, int, float, float, float]]:
    config = CompressionConfig()
    out = []
    for path in sorted(REGRESSION.glob("*.json")):
        rows = rows_of(path)
        texts = [retention.row_text(r) for r in rows]
        fallback = local_summary(rows, [], config.fallback_summary_max_chars)
        built = prompts.build_prompt(rows, [], target_tokens=2_000, config=config)
        digest = summarize(built, model, idle_timeout=10, total_timeout=30).text
        truncated = "\n".join(texts)[: len(fallback)]
        score = retention.score(texts, [fallback])
        out.append(
            (
                path.stem,
                score.items,
                score.ratio,
                retention.score(texts, [digest]).ratio,
                retention.score(texts, [truncated]).ratio,
            )
        )
    return out


def synthetic(rows: int) -> list[str]:
    """A tool-heavy span: asks, tool calls with paths and versions, results with errors."""
    texts = []
    for n in range(rows):
        texts.append(
            f"step {n}: run `pytest tests/test_mod_{n % 97}.py` on billing-svc v1.{n % 13}.{n % 7}"
            f"\nFAILED tests/test_mod_{n % 97}.py::test_case_{n % 31} - AssertionError: "
            f"expected 200 got {400 + n % 5}; took {n % 900} ms; see /srv/app/logs/run_{n}.log"
            f"\n缓存命中率下降到 {n % 100}%，数据库连接池 pool_size={n % 50}"
        )
    return texts


def cost(rows: int) -> tuple[int, float, float, float]:
    texts = synthetic(rows)
    chars = sum(len(t) for t in texts)
    started = time.perf_counter()
    for text in texts:
        text.split()
    baseline = time.perf_counter() - started
    started = time.perf_counter()
    retention.score(retention.sample(texts), ["a summary of it"])
    scored = time.perf_counter() - started
    redactor = Redactor(compile_rules(NAMES, {}))
    started = time.perf_counter()
    for text in texts:
        redactor.mask(text)
    masked = time.perf_counter() - started
    return chars, scored, masked, baseline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000, help="rows of the synthetic span")
    args = parser.parse_args()
    with FakeModelServer() as server:
        server.script.default = Digest()
        model = SummaryModelConfig(model="loopback-digest", base_url=server.base_url)
        table = scores(model)
    print("Salient items kept, by summary (baseline: the span's first characters, cut to the")
    print("fallback's length)\n")
    print(
        f"{'span':<12} {'items':>5} {'fallback':>9} {'digest':>7} {'truncated':>10} {'fb/trunc':>9}"
    )
    for name, items, fallback, digest, truncated in table:
        ratio = f"{fallback / truncated:.2f}x" if truncated else "n/a"
        print(
            f"{name:<12} {items:>5} {fallback:>9.0%} {digest:>7.0%} {truncated:>10.0%} {ratio:>9}"
        )
    chars, scored, masked, baseline = cost(args.rows)
    print(f"\nScoring a {args.rows:,}-row span ({chars:,} characters, sampled to at most")
    print(f"{retention.SCAN_CHARS:,}):\n")
    print(f"{'':<24} {'ms':>9}   {'ratio':>7}")
    print(f"{'score (items, match)':<24} {scored * 1000:>9.1f}   {scored / baseline:>6.1f}x")
    print(f"{'mask (all six shapes)':<24} {masked * 1000:>9.1f}   {masked / baseline:>6.1f}x")
    print(f"{'baseline: str.split':<24} {baseline * 1000:>9.1f}   {1:>6.1f}x")


if __name__ == "__main__":
    main()
