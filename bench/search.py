"""Recall latency on a generated corpus: each query's first lookup beside its later ones, the
parts of an answer's time, PostgreSQL beside SQLite, and the HTTP path beside the service.

    .venv/bin/python bench/search.py                    # 100,000 and 1,000,000 messages
    .venv/bin/python bench/search.py --sizes 100000     # one size
    .venv/bin/python bench/search.py --backend sqlite   # or postgres; default: both
    .venv/bin/python bench/search.py --http             # also through GET /api/v1/search
    .venv/bin/python bench/search.py --backend postgres --pg-delay-ms 0.1  # a database away

For each size and backend, in a fresh SQLite file or a fresh PostgreSQL database with the
service's settings: load a deterministic corpus (mixed English, Chinese, code and tool output; 1
in 4 rows archived, as after compressions; 240 rare facts in 12 kinds, each said once), build the
search indexes (timed), then run every query kind -- common words, CJK, substrings, the odd
queries that end in the bounded scan, and the facts -- through the same service the API uses,
within one channel as a gateway's key limits it, 20 hits with windows of 2. Each query's *first*
lookup is timed (nothing kept for it yet: an agent's new question), with its parts (the lookup,
the hits' rows, windows, excerpts, bookmarks, the refreshes it hands on); then the refreshes it
asked for run as the worker would, and ``--repeat`` later runs are timed (the steady state).
Baselines in the same run: a naive ``content LIKE '%needle%'`` scan (``ILIKE`` on PostgreSQL)
that finds every match, and on SQLite the same match on the FTS5 table alone (no join, no
filter). Where each fact's one message ranks on its first lookup; where a common word's best
match, planted in the oldest tenth, ranks. On PostgreSQL every kind is measured without planner
statistics (a fresh load or a restore) and analyzed; analyzed, each rare fact's first answer is
timed again both ways in turn -- its window read through the kept plan of a rare word
(search.pg.RARE_WINDOW) and planned for its words, the baseline -- and again with page one read
in its lookup's round trip (search.rows.FirstPage) and after it, the baseline; the last table
puts its first answers beside SQLite's. ``--http`` then serves the corpus (``manage.py
serve``: the web server and its worker) and asks every query through ``GET /api/v1/search`` again,
first and later, beside the in-process answers.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import nullcontext
from itertools import accumulate
from pathlib import Path
from urllib.parse import urlencode, urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._timing import free_port, percentile  # noqa: E402 - after the path

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
    import logging

    import django

    django.setup()
    logging.getLogger("django-q").setLevel(logging.WARNING)  # "Enqueued ..." per refresh asked


# A common word's best match, planted in the oldest session of the first channel (the oldest
# tenth of any size): said far more often than any generated sentence says it, so it ranks
# first by BM25 and by ts_rank alike. The benchmark checks it comes first.
PLANTED = " ".join(["deploy"] * 12)
PLANTED_AT = 200  # its position in that session

# Rare facts, each said once in the whole corpus, 20 of each of 12 kinds: what an agent most
# often looks up (a code, a path, a name said once weeks ago). Each kind's query is the fact
# or a part of it; the benchmark checks where its one message ranks.
_USED_HAN = set(HAN) | set("".join(HEAD_ZH)) | set("".join(ZH_LEXICON))
RARE_HAN = [chr(c) for c in range(0x9FA5, 0x4E00, -1) if chr(c) not in _USED_HAN][:60]
FACTS_PER_KIND = 20


def _facts() -> dict[str, list[tuple[str, str]]]:
    """Kind -> [(the message that says it, the query that looks it up)]."""
    n = range(FACTS_PER_KIND)
    kinds: dict[str, list[tuple[str, str]]] = {
        "fact_word": [
            (f"The handover code is lumenveil{i:02d} tonight.", f"lumenveil{i:02d}") for i in n
        ],
        "fact_phrase": [
            (
                f"We parked the saffron{i:02d} lantern rollout until Friday.",
                f"saffron{i:02d} lantern",
            )
            for i in n
        ],
        "fact_identifier": [
            (f"Call reconcile_ledger_v{i} before closing the month.", f"reconcile_ledger_v{i}")
            for i in n
        ],
        "fact_path": [
            (
                f"Config now lives in /srv/hermes/releases/r{i:03d}/settings.toml.",
                f"releases/r{i:03d}/settings.toml",
            )
            for i in n
        ],
        "fact_url": [
            (
                f"Status page: https://status.example.net/incident/{4100 + i} (resolved).",
                f"status.example.net/incident/{4100 + i}",
            )
            for i in n
        ],
        "fact_version": [
            (
                f"Pinned the client to 9.{i}.{i * 7 % 10}-rc{i % 4} after the regression.",
                f"9.{i}.{i * 7 % 10}-rc{i % 4}",
            )
            for i in n
        ],
        "fact_error_code": [
            (
                f"The nightly job failed with E{7100 + i}_QUOTA_EXCEEDED again.",
                f"E{7100 + i}_QUOTA_EXCEEDED",
            )
            for i in n
        ],
        "fact_email": [
            (
                f"Escalate to oncall{i:02d}@ledger.example if it pages twice.",
                f"oncall{i:02d}@ledger.example",
            )
            for i in n
        ],
        "fact_zh_word": [
            (
                f"上线前请确认{RARE_HAN[i]}{RARE_HAN[20 + i]}协议的版本。",
                f"{RARE_HAN[i]}{RARE_HAN[20 + i]}",
            )
            for i in n
        ],
        "fact_zh_1char": [(f"备注：{RARE_HAN[40 + i]}字号已经登记。", RARE_HAN[40 + i]) for i in n],
        "fact_mixed": [(f"用Kafka{i:02d}重试三次后告警。", f"Kafka{i:02d}重试") for i in n],
        "fact_substring": [
            (
                f"Uploaded the artifact xylophonequartz{i:02d}tailwind to the bucket.",
                f"phonequartz{i:02d}tail",
            )
            for i in n
        ],
    }
    return kinds


FACTS = _facts()


def _fact_places(sessions: int) -> dict[tuple[int, int], str]:
    """Where each fact is said: (session number, position), in the first channel's sessions
    (every CHANNELS-th), spread from the oldest to the newest, live and archived rows alike."""
    ours = list(range(0, sessions, CHANNELS))
    said = [text for kind in FACTS.values() for text, _ in kind]
    places: dict[tuple[int, int], str] = {}
    for j, text in enumerate(said):
        session = ours[(j * 7919) % len(ours)]
        position = 1 + (j * 131) % 498
        while (session, position) in places or (session, position) == (0, PLANTED_AT):
            position = position % 498 + 1
        places[(session, position)] = text
    return places


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
    places = _fact_places(-(-size // per_session))
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
            text = places.get((start // per_session, p), text)
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


# The parts of a full answer, timed where the service calls them: the lookup is the service's
# own lookup_seconds; after it the hits' rows (with the rows around them, their windows' first
# read), their windows (the rest of them: a wider read where rolled-back rows leave a window
# short, and their assembly), excerpts and bookmarks; and the refreshes a lookup asks for,
# handed on (search.ranked.flush) once the answer is built.
PARTS = {
    "rows": ("search.rows", "read_page"),  # the hits' rows, and their windows' first read
    "windows": ("search.results", "windows"),
    "excerpts": ("search.results", "excerpt_html"),
    "bookmarks": ("search.results", "bookmarks"),
    "refresh asks": ("search.ranked", "flush"),
}


class Parts:
    """Wraps the PARTS' functions to add up the time spent in each, and records the refreshes
    a lookup asked for, so the benchmark can run them as the worker would."""

    def __init__(self) -> None:
        import importlib

        from search import ranked

        self.spent: dict[str, float] = dict.fromkeys(PARTS, 0.0)
        self.asks: list = []
        for name, (module_name, attribute) in PARTS.items():
            module = importlib.import_module(module_name)
            setattr(module, attribute, self._timed(name, getattr(module, attribute)))
        self._pending = ranked._pending

    def _timed(self, name: str, real):
        def timed(*args, **kwargs):
            if name == "refresh asks":
                self.asks += getattr(self._pending, "asks", None) or []
            t0 = time.perf_counter()
            try:
                return real(*args, **kwargs)
            finally:
                self.spent[name] += time.perf_counter() - t0

        return timed

    def take(self) -> dict[str, float]:
        spent, self.spent = self.spent, dict.fromkeys(PARTS, 0.0)
        return spent

    def refresh(self) -> None:
        """What the worker does with the asks, at once (a running service's worker does it
        within a moment of the first lookup)."""
        from search.tasks import refresh_ranked

        asks, self.asks = self.asks, []
        for (index, expression, _), phrases, channel_id in asks:
            refresh_ranked(index, expression, phrases, channel_id)


def classes() -> dict[str, list[str]]:
    """Every query kind: the common and odd queries, then the rare facts' queries."""
    return {**QUERIES, **{kind: [q for _, q in facts] for kind, facts in FACTS.items()}}


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


# A process's first searches (imports, compiled patterns, the connection's first statements):
# asked, untimed, before any query is timed, in process as over HTTP, after the warm-up a web
# process runs when it starts (search.warm: on SQLite, the file read into the OS cache). A
# query's first lookup is then what a running service does with a new question.
WARM_UP = ("warm", "up", "数据", "zz")
SCANNED_PER_KIND = 5  # the LIKE baseline's cost hardly depends on the needle
IDLE_MS = 50  # over HTTP, the pause before a fact's later requests (and floors after one)


def measure(repeat: int, parts: Parts) -> dict:
    """Each query's first lookup (nothing kept for it yet, as when an agent asks something new)
    timed with its parts, then the refreshes it asked for run, then ``repeat`` later runs: the
    steady state. Per kind: the samples, and for the rare facts where their one message ranked."""
    from django.db import connection, transaction

    from search import ranked
    from search.filters import Filters
    from search.service import search
    from search.warm import warm_connection, warm_up
    from sessions_app.models import Channel, Message

    with connection.cursor() as cursor:
        ranked.clear(cursor)
    ranked._asked.clear()
    said = {
        text: pk
        for text, pk in Message.objects.filter(
            content__in=[t for kind in FACTS.values() for t, _ in kind]
        ).values_list("content", "pk")
    }
    # As the API searches for a gateway: within its channel.
    api = Filters(channel_id=Channel.objects.order_by("pk").values_list("pk", flat=True)[0])
    warm_up(close=False)  # what a web process does when it starts (search.warm)
    warm_connection()  # ...and each of its request threads, on its connection
    for q in WARM_UP:
        search(q, api, limit=20, window=2)
        ranked.drain(30)
        parts.take()
        parts.asks.clear()
    out: dict[str, dict] = {}
    for kind, queries in classes().items():
        m: dict = {k: [] for k in ("first", "first_lookup", "steady", "steady_lookup")}
        m |= {"unfiltered": [], "alone": [], "scan": [], "ranks": [], "indexes": set()}
        m["parts"] = dict.fromkeys(PARTS, 0.0)
        facts = dict(FACTS.get(kind, []))
        for n, q in enumerate(queries):
            parts.take()
            result = search(q, api, limit=20, window=2)
            spent = parts.take()
            m["first"].append(result.total_seconds)
            m["first_lookup"].append(result.lookup_seconds)
            for name, seconds in spent.items():
                m["parts"][name] += seconds
            m["indexes"].add(result.index or "none")
            if facts:
                pk = said[next(t for t, query in facts.items() if query == q)]
                hits = [h.message.pk for h in result.hits]
                m["ranks"].append(hits.index(pk) + 1 if pk in hits else None)
            # The enqueuer thread queues the asks after the answer (a write, on the ORM broker):
            # let it finish before timing anything else, then run them as the worker would.
            ranked.drain(30)
            parts.refresh()
            search(q, limit=20, window=0)  # the unfiltered scope's first lookup, untimed
            ranked.drain(30)
            parts.refresh()
            for _ in range(repeat):
                result = search(q, api, limit=20, window=2)
                m["steady"].append(result.total_seconds)
                m["steady_lookup"].append(result.lookup_seconds)
                plain = search(q, limit=20, window=0)
                m["unfiltered"].append(plain.lookup_seconds)
                baseline = _index_alone(q, plain.index)
                if baseline is not None:
                    m["alone"].append(baseline)
            if n >= SCANNED_PER_KIND:
                continue
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
            m["scan"].append(time.perf_counter() - t0)
        m["parts"] = {k: v / len(queries) for k, v in m["parts"].items()}
        m["indexes"] = "/".join(sorted(m["indexes"]))
        out[kind] = m
    return out


def api_search(conn: http.client.HTTPConnection, key: str) -> Callable[[str], tuple[float, float]]:
    """``GET /api/v1/search?q=...`` with ``key`` on the keep-alive ``conn``: a function of the
    query that answers (the request's time from the client, its own search's time in the web
    process: the answer's ``Server-Timing: search``), and stops the benchmark on any answer
    but a 200 with a JSON body."""

    def get(q: str) -> tuple[float, float]:
        began = time.perf_counter()
        conn.request(
            "GET",
            "/api/v1/search?" + urlencode({"q": q}),
            headers={"Authorization": f"Bearer {key}", "Host": "127.0.0.1"},
        )
        response = conn.getresponse()
        body = response.read()
        seconds = time.perf_counter() - began
        if response.status != 200:
            raise SystemExit(f"GET /api/v1/search?q={q}: {response.status} {body[:300]!r}")
        json.loads(body)
        return seconds, server_timing(response.getheader("Server-Timing", ""))["search"]

    return get


def measure_http(base: str, key: str, repeat: int) -> dict[str, dict[str, list[float]]]:
    """The same queries through ``GET /api/v1/search`` of a running service (its web server, its
    worker refreshing what first lookups ask for), one keep-alive connection as a gateway's
    client keeps: each query's first request, then ``repeat`` later ones, timed from the
    client (sending, the web server, Django, the service, reading the whole answer)."""
    where = urlsplit(base)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    timed = api_search(conn, key)
    served: list[float] = []  # the last request's own search, timed in the web process

    def get(q: str) -> float:
        seconds, searched = timed(q)
        served[:] = [searched]
        return seconds

    for q in WARM_UP:
        for _ in range(3):
            get(q)
    out: dict[str, dict[str, list[float]]] = {}
    # Django's whole stack for a view that reads nothing (the middleware, no API, no database).
    out["floor: GET /healthz"] = {"first": [], "steady": _plain_gets(conn, "/healthz", 200)}
    # The same after an idle pause, as the facts' later requests come (below): on a small VM a
    # request after a pause costs more everywhere (caches and vCPUs gone cold), HTTP or not.
    out[f"floor: GET /healthz after {IDLE_MS} ms idle"] = {
        "first": [],
        "steady": _plain_gets(conn, "/healthz", 100, idle=IDLE_MS / 1000),
    }
    for kind, queries in classes().items():
        m: dict[str, list[float]] = {k: [] for k in ("first", "steady", "served", "served_later")}
        for q in queries:
            m["first"].append(get(q))
            m["served"] += served
            # The worker's refresh of a common query (asked by its first lookup) lands
            # meanwhile: later runs are the steady state, not beside the refresh.
            time.sleep(IDLE_MS / 1000 if kind in FACTS else 2.5)
            for _ in range(repeat):
                m["steady"].append(get(q))
                m["served_later"] += served
        out[kind] = m
    conn.close()
    return out


def _shipped_against_baseline(first) -> dict[str, dict[str, list[float]]]:
    """Each rare fact's first full answer as shipped (``first(q, False)``) and as its baseline
    (``first(q, True)``), per query both, one after the other, the order alternating (each
    leaves the other a warmer cache): {kind: {"shipped": [...], "baseline": [...]}}."""
    out: dict[str, dict[str, list[float]]] = {}
    for n, (kind, facts) in enumerate(FACTS.items()):
        m: dict[str, list[float]] = {"shipped": [], "baseline": []}
        for i, (_, q) in enumerate(facts):
            for baseline in (False, True) if (n + i) % 2 else (True, False):
                m["baseline" if baseline else "shipped"].append(first(q, baseline))
        out[kind] = m
    return out


def _first_answer(q: str) -> float:
    """A rare fact's first full answer as the API asks it (its channel, 20 hits, windows of 2),
    nothing kept for it, its refresh asks drained after it."""
    from django.db import connection

    from search import ranked
    from search.filters import Filters
    from search.service import search
    from sessions_app.models import Channel

    with connection.cursor() as cursor:
        ranked.clear(cursor)
    ranked._asked.clear()
    channel = Channel.objects.order_by("pk").values_list("pk", flat=True)[0]
    seconds = search(q, Filters(channel_id=channel), limit=20, window=2).total_seconds
    ranked.drain(30)
    return seconds


def kept_plan_against_planned() -> dict[str, dict[str, list[float]]]:
    """PostgreSQL: as shipped -- a rare word's window read through the kept plan of
    search.pg.RARE_WINDOW, its words not among the statistics' common ones; a fragment's probe
    and index read through search.pg_trigram's -- and planned as every first lookup's was
    before (the baseline): its words counted common, so that its window is planned for them,
    and the trigram route's statements written out."""
    from django.db import connection

    from search import pg
    from search.backends import postgres

    def first(q: str, baseline: bool) -> float:
        if baseline:
            with connection.cursor() as cursor:
                pg.count_as_common(cursor, q)
        postgres.KEPT_FIRST = not baseline
        try:
            return _first_answer(q)
        finally:
            postgres.KEPT_FIRST = True
            with connection.cursor() as cursor:
                pg.refresh_common(cursor)  # as the statistics have it again

    return _shipped_against_baseline(first)


def page_along_against_after() -> dict[str, dict[str, list[float]]]:
    """PostgreSQL: as shipped -- page one's hits and windows read in the lookup's round trip
    (search.rows.FirstPage) -- and with the page read after the lookup, in a round trip of its
    own (the baseline)."""
    from search.backends import postgres

    shipped = postgres.first_page

    def first(q: str, baseline: bool) -> float:
        postgres.first_page = (lambda limit, offset: None) if baseline else shipped
        try:
            return _first_answer(q)
        finally:
            postgres.first_page = shipped

    return _shipped_against_baseline(first)


def _against_baseline_table(
    compared: dict[str, dict[str, list[float]]], title: str, shipped: str, baseline: str
) -> None:
    print(f"\n{title}, each query both ways in turn (analyzed):\n")
    print(
        f"| query kind | {shipped} p50 ms | {shipped} p95 ms | {baseline} p50 ms "
        f"| {baseline} p95 ms | {baseline} / {shipped}, p50 (x) |"
    )
    print("|---|" + "---:|" * 5)
    for kind, m in compared.items():
        new, old = _ms(m["shipped"], 0.5), _ms(m["baseline"], 0.5)
        print(
            f"| {kind} | {new:.2f} | {_ms(m['shipped'], 0.95):.2f} | {old:.2f} "
            f"| {_ms(m['baseline'], 0.95):.2f} | {old / new:.2f} |"
        )


def server_timing(header: str) -> dict[str, float]:
    """``app;dur=1.234, search;dur=0.567`` as {name: seconds}."""
    out = {}
    for metric in header.split(","):
        name, _, duration = metric.strip().partition(";dur=")
        if duration:
            out[name] = float(duration) / 1000
    return out


def _plain_gets(conn, path: str, n: int, idle: float = 0) -> list[float]:
    samples = []
    for _ in range(n):
        if idle:
            time.sleep(idle)
        t0 = time.perf_counter()
        conn.request("GET", path, headers={"Host": "127.0.0.1"})
        response = conn.getresponse()
        response.read()
        samples.append(time.perf_counter() - t0)
        if response.status != 200:
            raise SystemExit(f"GET {path}: {response.status}")
    return samples


def _gunicorn(app: str, port: int) -> list[str]:
    """gunicorn's threaded worker with the service's processes and threads, serving ``app``."""
    from django.conf import settings

    server = settings.HERMES.server
    return [
        sys.executable, "-m", "gunicorn", app, "-k", "gthread", "-w", str(server.web_workers),
        "--threads", str(server.web_threads), "-b", f"127.0.0.1:{port}", "--log-level", "warning",
    ]  # fmt: skip


def _granian(app: str, port: int, workers: int, threads: int) -> list[str]:
    """granian as manage.py serve runs it (hermes_site.management.commands.serve.web_server_argv)
    with ``workers`` x ``threads``, serving ``app``, a plain WSGI application: none of the
    service's start-up (no factory)."""
    from django.conf import settings

    from hermes_site.management.commands.serve import web_server_argv

    server = settings.HERMES.server.model_copy(
        update={"web_server": "granian", "web_workers": workers, "web_threads": threads}
    )
    return web_server_argv(server, f"127.0.0.1:{port}", app, factory=False)


def _deployed(app: str, port: int) -> list[str]:
    """The web server the config chooses (server.web_server), serving ``app``."""
    from django.conf import settings

    server = settings.HERMES.server
    if server.web_server == "gunicorn":
        return _gunicorn(app, port)
    return _granian(app, port, server.web_workers, server.web_threads)


def wsgi_floor(
    raw: bool = False, server: Callable[[str, int], list[str]] | None = None
) -> tuple[list[float], list[float]]:
    """A constant answered by the deployed web server with the service's processes and threads
    (bench/_wsgi_floor): what the server and this client cost with no Django at all, back to
    back and after a pause. With ``raw``, the constant from one Python thread on a socket
    instead: what the machine costs a request with no HTTP server at all. ``server``: another
    web server's command for (the WSGI application, the port)."""
    port = free_port()
    if raw:
        command = [sys.executable, str(ROOT / "bench" / "_wsgi_floor.py"), str(port)]
    else:
        command = (server or _deployed)("bench._wsgi_floor:app", port)
    process = subprocess.Popen(command, cwd=ROOT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                _plain_gets(conn, "/", 20)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        return _plain_gets(conn, "/", 200), _plain_gets(conn, "/", 100, idle=IDLE_MS / 1000)
    finally:
        process.terminate()
        process.wait(30)


class Service:
    """``manage.py serve`` on the benchmark's data folder: the web server and the worker, as
    deployed."""

    def __init__(self, data: Path, config: Path | None = None) -> None:
        """``config``: another config file for the service than the benchmark's own."""
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.data = data
        self.config = config

    def __enter__(self) -> Service:
        env = {**os.environ, "HERMES_ADDR": f"127.0.0.1:{self.port}"}
        if self.config is not None:
            env["HERMES_CONFIG"] = str(self.config)
        self.log = open(self.data / "serve.log", "w", encoding="utf-8")
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--no-migrate"],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/healthz")
                if conn.getresponse().status == 200:
                    return self
            except OSError:
                time.sleep(0.2)
        raise SystemExit(f"the service did not start: see {self.data / 'serve.log'}")

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        self.process.wait(60)
        self.log.close()


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


def build_sqlite_corpus(data: Path, size: int) -> None:
    """This benchmark's corpus of ``size`` messages in a fresh SQLite file in ``data`` (Django
    set up on it), indexed, analyzed and checkpointed, for the benchmarks that measure on it
    (bench/prewarm.py, bench/sqlite_cache.py); says how large it came out and how long it took."""
    _setup(data)
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    t0 = time.perf_counter()
    load(size)
    _build_indexes(size)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    mib = (data / "hermes.sqlite3").stat().st_size / 2**20
    print(f"corpus: {size:,} messages, {mib:,.0f} MiB, built in {time.perf_counter() - t0:.0f} s")


def run(size: int, repeat: int, http: bool, results: Path | None) -> None:
    with tempfile.TemporaryDirectory(prefix="hermes-search-bench-") as tmp:
        data = Path(tmp)
        _setup(data)
        from django.core.management import call_command
        from django.db import connection

        from search import pg

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
        parts = Parts()
        measured: dict[str, dict] = {}
        planted: dict[str, str] = {}
        if backend == "postgresql":
            # As a restored backup or a fresh load with autovacuum off: no statistics at all.
            with connection.cursor() as cursor:
                cursor.execute(
                    "DELETE FROM pg_statistic WHERE starelid IN ('sessions_app_message'::regclass,"
                    " 'sessions_app_session'::regclass, 'sessions_app_channel'::regclass)"
                )
                # The common words as the worker's minute task reads them: none, without them.
                pg.refresh_common(cursor)
            _settle()
            measured["fresh"] = measure(repeat, parts)
            planted["fresh"] = planted_first()
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE" if backend == "sqlite" else "ANALYZE sessions_app_message")
            if backend == "postgresql":  # as the worker's minute task does after an ANALYZE
                pg.refresh_common(cursor)
        size_after = _database_mib(data)
        trip = _round_trip_ms() if backend == "postgresql" else 0.0
        _settle()
        measured["analyzed"] = measure(repeat, parts)
        planted["analyzed"] = planted_first()
        compared = kept_plan_against_planned() if backend == "postgresql" else None
        along = page_along_against_after() if backend == "postgresql" else None
        over_http = None
        if http:
            from search import ranked
            from sessions_app.keys import issue_key
            from sessions_app.models import Channel

            key = issue_key(Channel.objects.order_by("pk")[0], label="bench").plaintext
            from django_q.models import OrmQ

            ranked.drain(30)
            with connection.cursor() as cursor:  # every lookup a first one again
                ranked.clear(cursor)
            OrmQ.objects.all().delete()  # the refreshes asked above, which no worker ran
            _settle()
            connection.close()
            with Service(data) as service:
                over_http = measure_http(service.base, key, repeat)
            hot, idle = wsgi_floor()
            from django.conf import settings as django_settings

            web_server = django_settings.HERMES.server.web_server
            over_http[f"floor: a constant, {web_server} alone"] = {"first": [], "steady": hot}
            over_http[f"floor: the same after {IDLE_MS} ms idle"] = {"first": [], "steady": idle}
            hot, idle = wsgi_floor(raw=True)
            over_http["floor: a constant, one thread on a socket"] = {"first": [], "steady": hot}
            over_http[f"floor: the socket after {IDLE_MS} ms idle"] = {"first": [], "steady": idle}

    name = "PostgreSQL" if backend == "postgresql" else "SQLite"
    print(f"\n## {size:,} messages, {name}\n")
    print(
        f"corpus load {load_s:.1f} s · index build ({built}) {build_s:.1f} s · "
        f"database {size_before:,.0f} MiB before indexes, {size_after:,.0f} MiB after"
        + (f" · a round trip to it {trip:.3f} ms (p50)" if backend == "postgresql" else "")
    )
    scan = "ILIKE" if backend == "postgresql" else "LIKE"
    for state, kinds in measured.items():
        title = (
            "without planner statistics (freshly loaded or restored)"
            if state == "fresh"
            else "analyzed"
            if backend == "postgresql"
            else ""
        )
        _tables(kinds, scan, title, backend == "sqlite")
        print(f"\n{planted[state]}")
    if compared is not None:
        _against_baseline_table(
            compared,
            "A rare fact's first full answer through the kept plans (a rare word's window: "
            "hermes_rare_window; a fragment's probe and index read: hermes_trigram_first) or "
            "planned for each query (the baseline: its words counted common, the trigram "
            "route's statements written out)",
            "kept plan",
            "planned",
        )
    if along is not None:
        _against_baseline_table(
            along,
            "A rare fact's first full answer with page one read in the lookup's round trip "
            "(hermes_ranked_head_or_page; a fragment's: hermes_trigram_first_page, when its "
            "index read is the answer) or after it, in a round trip of its own (the baseline)",
            "along",
            "after",
        )
    if over_http is not None:
        _http_table(over_http, measured["analyzed"])
    if results is not None:
        summary = {
            state: {kind: _summary(m) for kind, m in kinds.items()}
            for state, kinds in measured.items()
        }
        if over_http is not None:
            summary["http"] = {
                kind: {k: [_ms(v, 0.5), _ms(v, 0.95)] for k, v in m.items() if v}
                for kind, m in {**over_http, POOLED: _pooled(over_http)}.items()
            }
        results.write_text(json.dumps({"backend": backend, "size": size, **summary}))


def _settle() -> None:
    """Before a timed phase: the load and the index build left hundreds of MiB of dirty pages,
    written out now so that no writeback runs during the timed queries -- the OS's, and on
    PostgreSQL its checkpoint's (spread over minutes after a build, it would otherwise run
    beside the first phase)."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("CHECKPOINT")
    os.sync()


def _round_trip_ms() -> float:
    """The database's round trip for a statement that does nothing, p50 of 200."""
    from django.db import connection

    samples = []
    with connection.cursor() as cursor:
        for _ in range(200):
            t0 = time.perf_counter()
            cursor.execute("SELECT 1")
            cursor.fetchall()
            samples.append(time.perf_counter() - t0)
    return percentile(samples, 0.5) * 1000


def _ms(samples: list[float], q: float) -> float:
    return percentile(samples, q) * 1000


def _summary(m: dict) -> dict:
    return {
        "first_p50": _ms(m["first"], 0.5),
        "first_p95": _ms(m["first"], 0.95),
        "steady_p95": _ms(m["steady"], 0.95),
        "first_lookup_p50": _ms(m["first_lookup"], 0.5),
    }


def _tables(kinds: dict[str, dict], scan: str, title: str, sqlite: bool) -> None:
    if title:
        print(f"\n### {title}")
    print(
        "\nFull answers (20 hits with windows of 2, within one channel), each query's first "
        "lookup beside its later ones:\n"
    )
    print(
        "| query kind | answered by | first p50 ms | first p95 ms | later p50 ms | later p95 ms "
        "| first lookup p50 ms | later lookup p50 ms | unfiltered lookup p50 ms "
        + ("| FTS5 alone p50 ms | first lookup / FTS5 alone (x) " if sqlite else "")
        + f"| {scan} scan p95 ms | scan p95 / first p95 (x) |"
    )
    print("|---|---|" + "---:|" * (9 + (2 if sqlite else 0)))
    for kind, m in kinds.items():
        alone = ""
        if sqlite:
            a50 = _ms(m["alone"], 0.5) if m["alone"] else None
            l50 = _ms(m["first_lookup"], 0.5)
            alone = f"| {a50:.2f} | {l50 / a50:.1f} " if a50 else "| — | — "
        s95 = _ms(m["scan"], 0.95)
        print(
            f"| {kind} | {m['indexes']} | {_ms(m['first'], 0.5):.2f} | {_ms(m['first'], 0.95):.2f} "
            f"| {_ms(m['steady'], 0.5):.2f} | {_ms(m['steady'], 0.95):.2f} "
            f"| {_ms(m['first_lookup'], 0.5):.2f} | {_ms(m['steady_lookup'], 0.5):.2f} "
            f"| {_ms(m['unfiltered'], 0.5):.2f} {alone}| {s95:.0f} "
            f"| {s95 / _ms(m['first'], 0.95):.0f} |"
        )
    print(
        "\nWhere a first answer's time goes (mean ms per query): the lookup, then the hits' "
        "rows (with the rows of their windows), the windows' assembly, excerpts and bookmarks, "
        "the refreshes handed on, and the rest (the page's assembly):\n"
    )
    names = list(PARTS)
    print("| query kind | full | lookup | " + " | ".join(names) + " | rest |")
    print("|---|" + "---:|" * (len(names) + 3))
    for kind, m in kinds.items():
        full = sum(m["first"]) / len(m["first"]) * 1000
        lookup = sum(m["first_lookup"]) / len(m["first_lookup"]) * 1000
        spent = [m["parts"][n] * 1000 for n in names]
        rest = full - lookup - sum(spent)
        cells = " | ".join(f"{v:.3f}" for v in spent)
        print(f"| {kind} | {full:.3f} | {lookup:.3f} | {cells} | {rest:.3f} |")
    ranks = [r for m in kinds.values() for r in m["ranks"]]
    if ranks:
        first = sum(1 for r in ranks if r == 1)
        top5 = sum(1 for r in ranks if r is not None and r <= 5)
        missed = sum(1 for r in ranks if r is None)
        print(
            f"\nRare facts ({len(ranks)}, each said once): first {first}, in the top 5 {top5}, "
            f"not in the 20 hits {missed} (on their first lookup)"
        )


def _http_table(over_http: dict, in_process: dict) -> None:
    print(
        "\nThrough `GET /api/v1/search` (`manage.py serve`: the web server and its worker; one "
        "keep-alive client), beside the same full answers in process (analyzed, above):\n"
    )
    print(
        "| query kind | HTTP first p50 ms | HTTP first p95 ms | in-process first p95 ms "
        "| difference, first p95 (ms) | HTTP later p50 ms | HTTP later p95 ms "
        "| in-process later p95 ms | difference, later p95 (ms) |"
    )
    print("|---|" + "---:|" * 8)
    in_process = {**in_process, POOLED: _pooled(in_process)}
    for kind, m in {**over_http, POOLED: _pooled(over_http)}.items():
        if kind.startswith("floor"):
            floor = f"{_ms(m['steady'], 0.5):.2f} | {_ms(m['steady'], 0.95):.2f}"
            print(f"| {kind} | — | — | — | — | {floor} | — | — |")
            continue
        here = in_process[kind]
        f95, s95 = _ms(m["first"], 0.95), _ms(m["steady"], 0.95)
        i_f95, i_s95 = _ms(here["first"], 0.95), _ms(here["steady"], 0.95)
        print(
            f"| {kind} | {_ms(m['first'], 0.5):.2f} | {f95:.2f} | {i_f95:.2f} | {f95 - i_f95:+.2f} "
            f"| {_ms(m['steady'], 0.5):.2f} | {s95:.2f} | {i_s95:.2f} | {s95 - i_s95:+.2f} |"
        )
    print(
        "\nThe same requests beside their own search, timed in the web process (the answer's "
        "`Server-Timing: search`: the service's full answer for that very request, in the same "
        "process and moment), so the difference is the HTTP path alone:\n"
    )
    print(
        "| query kind | HTTP first p95 ms | its search p95 ms | difference, first p95 (ms) "
        "| HTTP later p95 ms | its search p95 ms | difference, later p95 (ms) |"
    )
    print("|---|" + "---:|" * 6)
    for kind, m in {**over_http, POOLED: _pooled(over_http)}.items():
        if kind.startswith("floor"):
            continue
        cells = []
        for sent, served in (("first", "served"), ("steady", "served_later")):
            h95, v95 = _ms(m[sent], 0.95), _ms(m[served], 0.95)
            cells.append(f"{h95:.2f} | {v95:.2f} | {h95 - v95:+.2f}")
        print(f"| {kind} | {' | '.join(cells)} |")


POOLED = f"every fact ({len(FACTS) * FACTS_PER_KIND} first requests)"


def _pooled(samples: dict) -> dict[str, list[float]]:
    """The rare facts' samples of every kind together (over HTTP or in process): the HTTP
    target reads "p95 at most the in-process answer + 1.5 ms" without "in every class", and a
    p95 of 240 moves less from run to run than one of 20."""
    kinds = [kind for kind in FACTS if kind in samples]
    keys = ("first", "steady", "served", "served_later")
    return {key: [x for kind in kinds for x in samples[kind].get(key, [])] for key in keys}


POSTGRES = os.environ.get("HERMES_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/hermes")


def _one(
    size: int, repeat: int, backend: str, http: bool, results: Path, pg_delay_ms: float = 0
) -> None:
    """One size on one backend, in its own process (Django is set up once per process); with
    ``pg_delay_ms``, PostgreSQL through bench/_delay_proxy (the database as if on another
    host)."""
    env = {k: v for k, v in os.environ.items() if k != "HERMES_DATABASE_URL"}
    args = [sys.executable, __file__, "--sizes", str(size), "--repeat", str(repeat)]
    args += ["--child-results", str(results)] + (["--http"] if http else [])
    if backend == "sqlite":
        subprocess.run(args, check=True, env=env)
        return
    from _timing import run_on_scratch_postgres

    if not pg_delay_ms:
        run_on_scratch_postgres(args, env, POSTGRES, "hermes_search_bench")
        return
    from urllib.parse import urlsplit

    where = urlsplit(POSTGRES)
    if where.hostname not in ("127.0.0.1", "localhost"):
        raise SystemExit(f"--pg-delay-ms proxies a PostgreSQL on loopback, not {POSTGRES}")
    port, target = free_port(), where.port or 5432
    delay = str(pg_delay_ms / 1000)
    proxy = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "_delay_proxy.py"), str(port), str(target), delay]
    )
    try:
        import socket

        deadline = time.monotonic() + 10
        while True:  # until it listens
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        host = where.netloc.rsplit(":", 1)[0] if where.port else where.netloc
        proxied = where._replace(netloc=f"{host}:{port}").geturl()
        run_on_scratch_postgres(args, env, proxied, "hermes_search_bench")
    finally:
        proxy.terminate()
        proxy.wait(10)


def _backends_table(found: list[dict]) -> None:
    """PostgreSQL's first lookups beside SQLite's, per kind (the target: at most 3x at p95)."""
    for size in sorted({r["size"] for r in found}):
        runs = {r["backend"]: r for r in found if r["size"] == size}
        if set(runs) != {"sqlite", "postgresql"}:
            continue
        lite, pg = runs["sqlite"]["analyzed"], runs["postgresql"]
        print(f"\n## {size:,} messages: PostgreSQL's first full answers beside SQLite's\n")
        print(
            "| query kind | SQLite first p95 ms | PostgreSQL fresh first p95 ms | ratio (x) "
            "| PostgreSQL analyzed first p95 ms | ratio (x) |"
        )
        print("|---|---:|---:|---:|---:|---:|")
        for kind, m in lite.items():
            fresh, analyzed = pg["fresh"][kind]["first_p95"], pg["analyzed"][kind]["first_p95"]
            base = m["first_p95"]
            print(
                f"| {kind} | {base:.2f} | {fresh:.2f} | {fresh / base:.1f} | {analyzed:.2f} "
                f"| {analyzed / base:.1f} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=3, help="later runs of each query")
    parser.add_argument(
        "--backend",
        choices=("both", "sqlite", "postgres"),
        default="both",
        help="both: SQLite, then PostgreSQL where it answers ($HERMES_TEST_POSTGRES_URL)",
    )
    parser.add_argument(
        "--http",
        action="store_true",
        help="also through GET /api/v1/search of the service (manage.py serve) on the corpus",
    )
    parser.add_argument(
        "--pg-delay-ms",
        type=float,
        default=0,
        help="PostgreSQL through a proxy holding each chunk this long each way (the database "
        "on another host; the run prints the round trip it got)",
    )
    parser.add_argument("--child-results", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pg_delay_ms < 0:
        parser.error("--pg-delay-ms: a delay is 0 or more milliseconds")
    if args.child_results:  # a child: one size, on the backend its environment names
        run(args.sizes[0], args.repeat, args.http, args.child_results)
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
    print("Search benchmark: first lookups and later ones, beside a naive scan and the bare index")
    found = []
    with tempfile.TemporaryDirectory(prefix="hermes-search-results-") as tmp:
        for size in args.sizes:
            for backend in backends:
                sys.stdout.flush()
                results = Path(tmp) / f"{size}-{backend}.json"
                _one(size, args.repeat, backend, args.http, results, args.pg_delay_ms)
                found.append(json.loads(results.read_text()))
    _backends_table(found)


if __name__ == "__main__":
    main()
