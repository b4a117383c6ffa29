"""Recall latency on a generated corpus, beside a naive LIKE scan over the same rows.

    .venv/bin/python bench/search.py                 # 100,000 and 1,000,000 messages
    .venv/bin/python bench/search.py --sizes 100000  # one size
    .venv/bin/python bench/search.py --backend sqlite  # or postgres; default: both

For each size and backend, in a fresh SQLite file or a fresh PostgreSQL database with the
service's settings: load a deterministic corpus (mixed English, Chinese, code and tool output; 1
in 4 rows archived, as after compressions), build the three search indexes (timed), then run
word, CJK, substring and fallback queries through the same service the API uses (20 hits with
their windows and bookmarks), and the same needles through a naive ``content LIKE '%needle%'``
scan (``ILIKE`` on PostgreSQL) that finds every match (what ranking all matches without an index
needs). Prints p50/p95 per query kind: the *lookup* (routing, matching, ranking:
the same job as the scan) and the *full* response (plus excerpts, windows and bookmarks), beside
the scan's, with the ratios. Sessions are spread over four channels and every query runs as the
API runs it for a gateway, within one channel; the lookup is also reported without that filter
and, on SQLite, beside the same match on the FTS5 table alone (no join, no filter: the cost of
the index itself). Each query runs ``--repeat`` times, after one untimed run that lets the
worker keep the best rows of a query matching more than the rank window (the refresh runs at
once here, as the worker's would in a running service; search.ranked): what is timed is the
steady state. The first lookup of such a query, before its refresh lands, is ranked within its
newest window as ``--first-lookups`` measures. Last, where a common word's best match planted in
the oldest tenth of the corpus ranks (it should be first).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import nullcontext
from itertools import accumulate
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._timing import percentile  # noqa: E402 - after the path

SEED = 20261130
CHANNELS = 4
# A Zipf-distributed lexicon (as in real text: a few words everywhere, a long tail of rare ones):
# 120 real words at the head, then synthetic terms, 5,000 in all; weight of rank r is 1/r.
HEAD_EN = """the to and of a in is for that it on with as this be are by not at from or have an
was but if will can all new do run use get set one more when up out file test user data server
error request config build code fix time log cache deploy session model check update table query
version branch commit review worker queue database migration index token summary archive search
restart nginx redis postgres docker failure retry latency memory thread process endpoint payload
header cookie upstream socket certificate backup cluster replica shard schema rollback timeout
monitor alert dashboard metric trace span owner ticket sprint release hotfix tenant billing invoice
webhook scheduler cron lambda bucket""".split()
EN_LEXICON = HEAD_EN + [f"term{n:04d}" for n in range(5_000 - len(HEAD_EN))]
EN_CUM = list(accumulate(1 / (rank + 1) for rank in range(len(EN_LEXICON))))
HEAD_ZH = """数据库 迁移 失败 缓存 失效 服务器 超时 日志 错误 部署 回滚 配置 文件 用户
会话 压缩 摘要 归档 搜索 索引 队列 线程 内存 测试 通过 重启 证书 备份 集群 副本""".split()
HAN = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严"
    ""
)
ZH_LEXICON = HEAD_ZH + [
    HAN[(i * 7) % len(HAN)] + HAN[(i * 13 + 5) % len(HAN)] for i in range(2_000)
]
ZH_CUM = list(accumulate(1 / (rank + 1) for rank in range(len(ZH_LEXICON))))
NEEDLES = [
    f"{w}{n}" for w in ("zephyr", "quasar", "nimbus", "kestrel", "obelisk") for n in range(40)
]
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
        words = rng.choices(EN_LEXICON, cum_weights=EN_CUM, k=rng.randint(8, 30))
        if rng.random() < 0.02:
            words.insert(rng.randint(0, len(words)), rng.choice(NEEDLES))
        return " ".join(words).capitalize() + "."
    if kind < 6:
        chars = "".join(rng.choices(ZH_LEXICON, cum_weights=ZH_CUM, k=rng.randint(4, 14)))
        if rng.random() < 0.01:
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


# A common word's best match, planted in the oldest session of the first channel (the oldest
# tenth of any size): said far more often than any generated sentence says it, so it ranks
# first by BM25 and by ts_rank alike. The benchmark checks it comes first.
PLANTED = " ".join(["deploy"] * 12)
PLANTED_AT = 200  # its position in that session


def load(size: int) -> None:
    """Insert ``size`` rows with the index triggers off (indexes are built and timed after)."""
    from django.db import connection, transaction
    from django.utils import timezone

    from search import fts, pg
    from sessions_app.keys import create_channel

    rng = random.Random(SEED)
    # Four gateways' channels, sessions dealt round-robin: the API's channel filter (each
    # gateway sees its own) then has something to filter out.
    channels = [create_channel(f"bench-{size}-{n}")[0] for n in range(CHANNELS)]
    per_session = 500
    now = timezone.now()
    postgres = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        if postgres:  # the vectors and indexes are built (and timed) after the load
            for name in pg.INDEX_NAMES.values():
                cursor.execute(f"DROP INDEX IF EXISTS {name}")
            for column in pg.COLUMNS.values():
                cursor.execute(f"ALTER TABLE {pg.MESSAGE_TABLE} DROP COLUMN IF EXISTS {column}")
        else:
            for statement in ("search_fts_ai", "search_fts_au", "search_fts_ad"):
                cursor.execute(f"DROP TRIGGER IF EXISTS {statement}")
    for start in range(0, size, per_session):
        channel = channels[(start // per_session) % CHANNELS]
        sid = uuid.uuid4().hex
        count = min(per_session, size - start)
        rows = []
        for p in range(count):
            i = start + p
            text = sentence(rng, i)
            if start == 0 and p == PLANTED_AT:
                text = PLANTED
            archived = p < count // 4
            rows.append(
                (
                    sid,
                    channel.pk,
                    p,
                    "user" if p % 2 == 0 else "assistant",
                    text,
                    len(text) // 4,
                    not archived,
                    archived,
                    now if postgres else now.isoformat(sep=" "),
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
                "INSERT INTO sessions_app_message (session_id, channel_id, position, role,"
                " content, token_count, active, compressed, is_summary, is_fallback_summary,"
                " created_at, rollback_reason) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, false,"
                " false, %s, '')",
                rows,
            )
    if not postgres:
        with connection.cursor() as cursor:
            for statement in fts.create_statements():
                cursor.execute(statement)


# Half the queries are words a person would look up (head words at several frequencies), half
# are rarer; see docs/benchmarks.md for how many messages each matches.
QUERIES = {
    "word": [
        "deploy",
        "redis",
        "certificate",
        "webhook",
        "term0042",
        "term0900",
        "zephyr7",
        "quasar12",
        "kestrel30",
        "restart nginx",
    ],
    "cjk": [
        "数据库",
        "缓存",
        "证书",
        "集群副本",
        "回滚配置",
        "归",
        "用Django写",
        ZH_LEXICON[200],
        ZH_LEXICON[900],
        ZH_LEXICON[40] + ZH_LEXICON[41],
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


def _index_alone(q: str, index: str | None) -> float | None:
    """The baseline of a lookup: the same match on the FTS5 table alone (no join, no filter),
    newest ``rank_window`` matches then BM25 over them, as the service's two phases do; None
    where no FTS5 index answered (the scan) or on PostgreSQL."""
    from django.db import connection

    from core.config import get_config
    from search.fts import table
    from search.query import parse

    if connection.vendor != "sqlite" or index in (None, "scan"):
        return None
    route = next(r for r in parse(q).routes if r.index == index)
    t = table(index)
    t0 = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT rowid FROM {t} WHERE {t} MATCH %s ORDER BY rowid DESC LIMIT %s",
            [route.expression, get_config().search.rank_window],
        )
        found = [row[0] for row in cursor.fetchall()]
        if found:
            cursor.execute(
                f"SELECT rowid, bm25({t}) FROM {t} WHERE {t} MATCH %s AND rowid BETWEEN %s AND"
                " %s ORDER BY 2, 1 LIMIT 21",
                [route.expression, found[-1], found[0]],
            )
            cursor.fetchall()
    return time.perf_counter() - t0


def _refresh_at_once() -> None:
    """search.ranked.flush as the worker would run what it queues, without a worker."""
    from search import ranked
    from search.tasks import refresh_ranked

    asks, ranked._pending.asks = getattr(ranked._pending, "asks", None) or [], []
    for (index, expression, _), phrases, channel_id in asks:
        refresh_ranked(index, expression, phrases, channel_id)


def planted_first() -> str:
    """Where the planted best match of ``deploy`` ranks, as a gateway's search in its channel
    answers (after the timed runs: in the steady state, its best rows kept)."""
    from search.filters import Filters
    from search.service import search
    from sessions_app.models import Channel, Message

    planted = Message.objects.get(content=PLANTED)
    channel = Channel.objects.order_by("pk").values_list("pk", flat=True)[0]
    oldest = Message.objects.count() // 10
    result = search("deploy", Filters(channel_id=channel), limit=20, window=0)
    hits = [h.message.pk for h in result.hits]
    where = f"#{hits.index(planted.pk) + 1}" if planted.pk in hits else "not in the first 20"
    return (
        f"`deploy`'s best match, planted at id {planted.pk:,} (the oldest tenth: ids up to "
        f"{oldest:,}), among {result.total:,} matches in the channel: {where}"
        f"{'' if result.ranked_within is None else f' (ranked within {result.ranked_within})'}"
    )


def measure(size: int, repeat: int, warm: bool = True) -> list[tuple]:
    from django.db import connection, transaction

    from search import ranked
    from search.filters import Filters
    from search.service import search
    from sessions_app.models import Channel

    ranked.flush = _refresh_at_once
    if not warm:  # every lookup a first one: ranked within its newest window
        ranked.enabled = lambda: False
    with connection.cursor() as cursor:
        ranked.clear(cursor)
    ranked._asked.clear()

    # As the API searches for a gateway: within its channel.
    api = Filters(channel_id=Channel.objects.order_by("pk").values_list("pk", flat=True)[0])
    rows = []
    for kind, queries in QUERIES.items():
        full: list[float] = []
        lookup: list[float] = []
        unfiltered: list[float] = []
        alone: list[float] = []
        scan: list[float] = []
        indexes = set()
        for q in queries:
            if warm:
                search(q, api, limit=20, window=2)
                search(q, limit=20, window=0)
            for _ in range(repeat):
                result = search(q, api, limit=20, window=2)
                full.append(result.total_seconds)
                lookup.append(result.lookup_seconds)
                plain = search(q, limit=20, window=0)
                unfiltered.append(plain.lookup_seconds)
                baseline = _index_alone(q, plain.index)
                if baseline is not None:
                    alone.append(baseline)
            indexes.add(result.index or "none")
            needle = q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            postgres = connection.vendor == "postgresql"
            like = "ILIKE" if postgres else "LIKE"  # case-blind on both
            t0 = time.perf_counter()
            scope = transaction.atomic() if postgres else nullcontext()  # SET LOCAL needs one
            with scope, connection.cursor() as cursor:
                if postgres:  # a naive scan: keep the planner off the trigram index on content
                    cursor.execute("SET LOCAL enable_bitmapscan = off")
                    cursor.execute("SET LOCAL enable_indexscan = off")
                sql = (  # LIKE or ILIKE, a constant
                    "SELECT id FROM sessions_app_message WHERE (active OR compressed) AND"
                    f" content {like} %s ESCAPE '\\'"
                )
                cursor.execute(sql, [f"%{needle}%"])
                cursor.fetchall()
            scan.append(time.perf_counter() - t0)
        rows.append(
            (
                kind,
                "/".join(sorted(indexes)),
                percentile(lookup, 0.5) * 1000,
                percentile(lookup, 0.95) * 1000,
                percentile(full, 0.5) * 1000,
                percentile(full, 0.95) * 1000,
                percentile(scan, 0.5) * 1000,
                percentile(scan, 0.95) * 1000,
                percentile(unfiltered, 0.5) * 1000,
                percentile(alone, 0.5) * 1000 if alone else None,
            )
        )
    return rows


def _database_mib(data: Path) -> float:
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_database_size(current_database())")
            return cursor.fetchone()[0] / 2**20
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return (data / "hermes.sqlite3").stat().st_size / 2**20


def _build_indexes(size: int) -> str:
    """Build the search indexes over the loaded rows; returns what was built."""
    from django.db import connection, transaction

    from search import fts, pg

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET maintenance_work_mem = '256MB'")
            pg.install(cursor)
            assert pg.invalid_indexes(cursor) == []
        return "2 stored tsvector columns and 4 GIN indexes"
    with transaction.atomic(), connection.cursor() as cursor:
        counts = fts.rebuild(cursor)
    assert set(counts.values()) == {size}, counts
    return "3 FTS5 indexes and their recent twins"


def run(size: int, repeat: int, warm: bool = True) -> None:
    with tempfile.TemporaryDirectory(prefix="hermes-search-bench-") as tmp:
        data = Path(tmp)
        _setup(data)
        from django.core.management import call_command
        from django.db import connection

        call_command("migrate", verbosity=0)
        backend = connection.vendor
        t0 = time.perf_counter()
        load(size)
        load_s = time.perf_counter() - t0
        if backend == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE sessions_app_message")
        size_before = _database_mib(data)
        t0 = time.perf_counter()
        built = _build_indexes(size)
        build_s = time.perf_counter() - t0
        fresh_rows = fresh_planted = None
        if backend == "postgresql":
            # As a restored backup or a fresh load with autovacuum off: no statistics at all.
            with connection.cursor() as cursor:
                cursor.execute(
                    "DELETE FROM pg_statistic WHERE starelid IN ('sessions_app_message'::regclass,"
                    " 'sessions_app_session'::regclass, 'sessions_app_channel'::regclass)"
                )
            os.sync()  # as below
            fresh_rows = measure(size, repeat, warm)
            fresh_planted = planted_first()
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE" if backend == "sqlite" else "ANALYZE sessions_app_message")
        size_after = _database_mib(data)
        # The build left hundreds of MiB of dirty pages: write them out first, so the disk's
        # writeback does not run during the timed queries.
        os.sync()
        search_rows = measure(size, repeat, warm)
        planted = planted_first()

    name = "PostgreSQL" if backend == "postgresql" else "SQLite"
    print(f"\n## {size:,} messages, {name}\n")
    print(
        f"corpus load {load_s:.1f} s · index build ({built}) {build_s:.1f} s · "
        f"database {size_before:,.0f} MiB before indexes, {size_after:,.0f} MiB after\n"
    )
    scan = "ILIKE" if backend == "postgresql" else "LIKE"
    if fresh_rows is not None:
        _table(fresh_rows, scan, "without planner statistics (freshly loaded or restored)")
        print(f"\n{fresh_planted}")
    _table(search_rows, scan, "analyzed" if fresh_rows is not None else "")
    print(f"\n{planted}")


def _table(search_rows: list[tuple], scan: str, title: str) -> None:
    if title:
        print(f"\n{title}:\n")
    print(
        "| query kind | answered by | lookup p50 ms | lookup p95 ms | full p50 ms | full p95 ms "
        f"| {scan} scan p50 ms | {scan} scan p95 ms | p95 speed-up, lookup (x) "
        "| p95 speed-up, full (x) | unfiltered lookup p50 ms | FTS5 alone p50 ms "
        "| lookup / FTS5 alone, p50 (x) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for kind, index, l50, l95, f50, f95, s50, s95, u50, a50 in search_rows:
        alone = f"{a50:.2f} | {l50 / a50:.1f}" if a50 else "— | —"
        print(
            f"| {kind} | {index} | {l50:.2f} | {l95:.2f} | {f50:.1f} | {f95:.1f} | {s50:.0f} "
            f"| {s95:.0f} | {s95 / l95:.0f} | {s95 / f95:.0f} | {u50:.2f} | {alone} |"
        )


POSTGRES = os.environ.get("HERMES_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/hermes")


def _one(size: int, repeat: int, backend: str, warm: bool = True) -> None:
    """One size on one backend, in its own process (Django is set up once per process)."""
    env = {k: v for k, v in os.environ.items() if k != "HERMES_DATABASE_URL"}
    args = [sys.executable, __file__, "--sizes", str(size), "--repeat", str(repeat)]
    args += ["--quiet-header"] + ([] if warm else ["--first-lookups"])
    if backend == "sqlite":
        subprocess.run(args, check=True, env=env)
        return
    from _timing import run_on_scratch_postgres

    run_on_scratch_postgres(args, env, POSTGRES, "hermes_search_bench")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each query")
    parser.add_argument(
        "--backend",
        choices=("both", "sqlite", "postgres"),
        default="both",
        help="both: SQLite, then PostgreSQL where it answers ($HERMES_TEST_POSTGRES_URL)",
    )
    parser.add_argument(
        "--first-lookups",
        action="store_true",
        help="time every lookup as a first one (a common query ranked within its newest window)",
    )
    parser.add_argument("--quiet-header", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quiet_header:  # a child: one size, on the backend its environment names
        run(args.sizes[0], args.repeat, not args.first_lookups)
        return
    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    if "postgres" in backends:
        try:
            from tests.processes import _admin_connection

            _admin_connection(POSTGRES).close()
        except Exception as exc:  # no PostgreSQL: measure SQLite alone and say so
            if args.backend == "postgres":
                raise SystemExit(f"PostgreSQL at {POSTGRES} does not answer: {exc}") from None
            print(f"(PostgreSQL at {POSTGRES} does not answer, measuring SQLite only: {exc})")
            backends.remove("postgres")
    print("Search benchmark (index lookup vs a naive scan); 20 hits per query with windows")
    for size in args.sizes:
        for backend in backends:
            sys.stdout.flush()
            _one(size, args.repeat, backend, not args.first_lookups)


if __name__ == "__main__":
    main()
