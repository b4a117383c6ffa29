"""Recall latency on a generated corpus, beside a naive LIKE scan over the same rows.

    .venv/bin/python bench/search.py                 # 100,000 and 1,000,000 messages
    .venv/bin/python bench/search.py --sizes 100000  # one size

For each size, in a fresh SQLite file with the service's settings: load a deterministic corpus
(mixed English, Chinese, code and tool output; 1 in 4 rows archived, as after compressions), build
the three FTS5 indexes (timed), then run word, CJK, substring and fallback queries through the
same service the API uses (20 hits with their windows and bookmarks), and the same needles through
a naive ``content LIKE '%needle%'`` scan that finds every match (what ranking all matches without
an index needs). Prints p50/p95 per query kind and the scan's, with the ratio.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SEED = 20261130
EN_WORDS = (
    "deploy server request timeout cache worker queue database migration index token session "
    "model summary archive search restart config nginx redis postgres docker build test failure "
    "retry latency memory thread process user assistant review branch commit rollback schema "
    "endpoint payload header cookie upstream socket certificate backup cluster replica shard"
).split()
RARE_EN = [
    f"{w}{n}" for w in ("zephyr", "quasar", "nimbus", "kestrel", "obelisk") for n in range(40)
]
ZH_PHRASES = (
    "数据库 迁移 失败 缓存 失效 服务器 超时 日志 错误 部署 回滚 配置 文件 用户 会话 压缩 摘要 "
    "归档 搜索 索引 队列 线程 内存 测试 通过 重启 证书 备份 集群 副本"
).split()
CODE = [
    "def get_user_by_email(email): return User.objects.get(email=email)",
    "SELECT id, title FROM posts WHERE author_id = %s ORDER BY created_at DESC",
    "raise ImproperlyConfigured('SECRET_KEY must not be empty')",
    "for i, row in enumerate(rows): cache.set(f'row:{i}', row, timeout=300)",
    "export DATABASE_URL=postgres://app@127.0.0.1:5432/app",
]
TOOL = [
    "2026-11-{d:02d} 12:{m:02d}:07 ERROR upstream timed out (110: Connection timed out) while "
    "reading response header from upstream, client: 10.0.{a}.{b}, server: shop.example",
    "PASSED tests/test_orders.py::test_checkout_{n} [ {p}%]\nFAILED tests/test_cart.py::"
    "test_total_{n} - AssertionError: assert {a} == {b}",
    "drwxr-xr-x  2 www-data www-data 4096 Nov {d} 12:{m:02d} /var/www/shop/media/cache_{n}",
]


def sentence(rng: random.Random, i: int) -> str:
    kind = i % 10
    if kind < 4:
        words = rng.choices(EN_WORDS, k=rng.randint(8, 30))
        if rng.random() < 0.02:
            words.insert(rng.randint(0, len(words)), rng.choice(RARE_EN))
        return " ".join(words).capitalize() + "."
    if kind < 6:
        chars = "".join(rng.choices(ZH_PHRASES, k=rng.randint(4, 14)))
        if rng.random() < 0.3:
            chars = chars[:4] + "用Django写" + chars[4:]
        return chars + "。"
    if kind < 8:
        return rng.choice(CODE).replace("email", rng.choice(["email", "name", "token", "uuid"]))
    template = rng.choice(TOOL)
    return template.format(
        d=rng.randint(1, 28),
        m=rng.randint(0, 59),
        a=rng.randint(0, 255),
        b=rng.randint(0, 255),
        n=rng.randint(0, 999),
        p=rng.randint(0, 100),
    )


def _setup(data_dir: Path) -> None:
    config = data_dir / "hermes.yaml"
    config.write_text(f"server:\n  data_dir: {data_dir}\n", encoding="utf-8")
    os.environ["HERMES_CONFIG"] = str(config)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hermes_site.settings")
    import django

    django.setup()


def load(size: int) -> None:
    """Insert ``size`` rows with the index triggers off (indexes are built and timed after)."""
    from django.db import connection, transaction
    from django.utils import timezone

    from search import fts
    from sessions_app.keys import create_channel

    rng = random.Random(SEED)
    channel, _ = create_channel(f"bench-{size}")
    per_session = 500
    now = timezone.now()
    with connection.cursor() as cursor:
        for statement in ("search_fts_ai", "search_fts_au", "search_fts_ad"):
            cursor.execute(f"DROP TRIGGER IF EXISTS {statement}")
    for start in range(0, size, per_session):
        sid = uuid.uuid4().hex
        count = min(per_session, size - start)
        rows = []
        for p in range(count):
            i = start + p
            text = sentence(rng, i)
            archived = p < count // 4
            rows.append(
                (
                    sid,
                    p,
                    "user" if p % 2 == 0 else "assistant",
                    text,
                    len(text) // 4,
                    not archived,
                    archived,
                    now.isoformat(sep=" "),
                )
            )
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO sessions_app_session (id, channel_id, title, model, context_window,"
                " context_window_source, live_messages, live_tokens, total_messages, compressions,"
                " next_position, failure_streak, ineffective_streak, created_at, updated_at,"
                " last_activity_at) VALUES (%s, %s, '', 'gpt-4o', 128000, 'catalog', %s, 0, %s, 0,"
                " %s, 0, 0, %s, %s, %s)",
                [sid, channel.pk, count - count // 4, count, count, now, now, now],
            )
            cursor.executemany(
                "INSERT INTO sessions_app_message (session_id, position, role, content,"
                " token_count, active, compressed, is_summary, is_fallback_summary, created_at,"
                " rollback_reason) VALUES (%s, %s, %s, %s, %s, %s, %s, 0, 0, %s, '')",
                rows,
            )
    with connection.cursor() as cursor:
        for statement in fts.create_statements():
            cursor.execute(statement)


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


QUERIES = {
    "word": [
        "timeout",
        "nginx",
        "migration",
        "zephyr7",
        "quasar12",
        "kestrel30",
        "certificate",
        "rollback schema",
        "obelisk3",
        "nimbus21",
    ],
    "cjk": [
        "缓存",
        "数据库迁移",
        "失败",
        "用Django写",
        "证书",
        "回滚配置",
        "归",
        "集群副本",
        "超时",
        "压缩摘要",
    ],
    "substring": [
        "user_by_emai",
        "ImproperlyConfig",
        "upstream timed",
        "test_checkout_42",
        "media/cache_9",
        "ATABASE_UR",
        "posts WHERE",
        "www-data 40",
    ],
    "fallback": ["%]", "4]", "%s", "(1", "::", "b=", "{i", "'r"],
}


def measure(size: int, repeat: int) -> list[tuple[str, float, float, float, float, str]]:
    from django.db import connection

    from search.service import search

    rows = []
    for kind, queries in QUERIES.items():
        ours: list[float] = []
        scan: list[float] = []
        indexes = set()
        for q in queries:
            for _ in range(repeat):
                t0 = time.perf_counter()
                result = search(q, limit=20, window=2)
                ours.append(time.perf_counter() - t0)
            indexes.add(result.index or "none")
            needle = q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            t0 = time.perf_counter()
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT id FROM sessions_app_message WHERE (active OR compressed) AND"
                    " content LIKE %s ESCAPE '\\'",
                    [f"%{needle}%"],
                )
                cursor.fetchall()
            scan.append(time.perf_counter() - t0)
        rows.append(
            (
                kind,
                percentile(ours, 0.5) * 1000,
                percentile(ours, 0.95) * 1000,
                percentile(scan, 0.5) * 1000,
                percentile(scan, 0.95) * 1000,
                "/".join(sorted(indexes)),
            )
        )
    return rows


def run(size: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory(prefix="hermes-search-bench-") as tmp:
        data = Path(tmp)
        _setup(data)
        from django.core.management import call_command
        from django.db import connection, transaction

        from search import fts

        call_command("migrate", verbosity=0)
        t0 = time.perf_counter()
        load(size)
        load_s = time.perf_counter() - t0
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size_before = (data / "hermes.sqlite3").stat().st_size
        t0 = time.perf_counter()
        with transaction.atomic(), connection.cursor() as cursor:
            counts = fts.rebuild(cursor)
        build_s = time.perf_counter() - t0
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            cursor.execute("ANALYZE")
        size_after = (data / "hermes.sqlite3").stat().st_size
        assert set(counts.values()) == {size}, counts
        search_rows = measure(size, repeat)

    print(f"\n## {size:,} messages\n")
    print(
        f"corpus load {load_s:.1f} s · index build (3 FTS5 indexes) {build_s:.1f} s · "
        f"database {size_before / 2**20:,.0f} MiB before indexes, "
        f"{size_after / 2**20:,.0f} MiB after\n"
    )
    print(
        "| query kind | answered by | p50 ms | p95 ms | LIKE scan p50 ms | LIKE scan p95 ms "
        "| p95 speed-up (x) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for kind, p50, p95, s50, s95, index in search_rows:
        print(
            f"| {kind} | {index} | {p50:.1f} | {p95:.1f} | {s50:.0f} | {s95:.0f} "
            f"| {s95 / p95:.0f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each query")
    args = parser.parse_args()
    print("Search benchmark (SQLite FTS5 vs LIKE scan); 20 hits per query with windows")
    for size in args.sizes:
        run(size, args.repeat)


if __name__ == "__main__":
    main()
