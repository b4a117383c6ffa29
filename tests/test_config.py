from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.config import (
    CompressionConfig,
    ConfigError,
    HermesConfig,
    config_path,
    load_config,
    parse_config,
)
from tests.processes import python

ROOT = Path(__file__).resolve().parent.parent


def test_no_file_means_the_documented_defaults():
    config = load_config(None)
    c = config.compression
    assert (c.enabled, c.threshold, c.threshold_tokens, c.target_ratio) == (True, 0.5, None, 0.2)
    assert (c.protect_first_n, c.protect_last_n, c.min_tail_user_messages) == (3, 20, 1)
    assert (c.max_attempts, c.in_place, c.abort_on_summary_failure) == (3, True, False)
    assert c.hygiene_hard_message_limit == 5000
    assert c.failure_cooldown_seconds == 600
    assert (c.anti_thrash_min_savings, c.anti_thrash_consecutive, c.anti_thrash_lock_seconds) == (
        0.10,
        2,
        300,
    )
    assert c.idle_compact_after_seconds == 0
    assert c.micro_compact is False
    assert c.codex_app_server_auto == "native"
    # The seed's message-count tail, not Hermes's lean default; no notices unless asked.
    assert (c.tail_mode, c.progress_notices) == ("legacy", False)
    assert config.server.max_message_bytes == 1024 * 1024
    assert config.auxiliary.compression.configured is False


def test_every_knob_of_spec_section_8_has_a_key():
    required = """enabled threshold threshold_tokens target_ratio protect_first_n protect_last_n
    min_tail_user_messages max_attempts in_place abort_on_summary_failure model_thresholds
    idle_compact_after_seconds proactive_prune_tokens proactive_prune_min_result_chars
    proactive_prune_min_reclaim_tokens micro_compact micro_compact_every_n_turns
    micro_compact_defrag_threshold_tokens hygiene_hard_message_limit hygiene_timeout_seconds
    hygiene_total_ceiling_seconds hygiene_failure_cooldown_seconds hygiene_max_turn_hold_seconds
    context_timeout_seconds context_total_ceiling_seconds codex_app_server_auto
    codex_responses_native codex_responses_compact_threshold failure_cooldown_seconds""".split()
    missing = [key for key in required if key not in CompressionConfig.model_fields]
    assert missing == []


def test_a_hermes_agent_style_file_loads(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(
        """
model:
  default: anthropic/claude-opus-4.6
  base_url: https://example.invalid/v1
auxiliary:
  compression:
    model: summary-model
    base_url: http://127.0.0.1:9/v1
    timeout: 60
compression:
  threshold: 0.4
  model_thresholds:
    "glm-5.2": 0.40
    "claude-sonnet": {ratio: 0.35, threshold_tokens: 150000}
  codex_app_server_auto: hermes
  tail_mode: lean
""",
        encoding="utf-8",
    )
    config = load_config(path)
    assert config.model.default == "anthropic/claude-opus-4.6"
    assert config.auxiliary.compression.configured
    assert config.compression.threshold == 0.4
    assert config.compression.model_thresholds["glm-5.2"] == 0.40
    assert config.compression.model_thresholds["claude-sonnet"].threshold_tokens == 150000
    assert config.compression.codex_app_server_auto == "managed"
    assert config.compression.tail_mode == "lean"


def test_model_block_accepts_model_as_an_alias_of_default():
    assert parse_config({"model": {"model": "gpt-4o"}}).model.default == "gpt-4o"


def _error(data) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    return str(info.value)


def test_an_unknown_key_is_named_with_the_allowed_keys():
    message = _error({"compression": {"treshold": 0.5}})
    assert "compression.treshold: unknown key" in message
    assert "threshold" in message.split("allowed keys here:")[1]


@pytest.mark.parametrize(
    ("data", "suggested"),
    [
        ({"compression": {"treshold": 0.5}}, "compression.threshold"),
        ({"compression": {"threshold_token": 9}}, "compression.threshold_tokens"),
        ({"compresion": {}}, "compression"),
        ({"server": {"bnd": "127.0.0.1:1"}}, "server.bind"),
        ({"server": {"metrics_tokn": "x"}}, "server.metrics_token"),
        ({"recall": {"excerpt_char": 10}}, "recall.excerpt_chars"),
    ],
)
def test_a_config_typo_suggests_the_nearest_key(data, suggested):
    message = _error(data)
    assert f"(did you mean `{suggested}`?)" in message


def test_a_key_like_nothing_suggests_nothing():
    message = _error({"server": {"qqqqqqq": 1}})
    assert "server.qqqqqqq: unknown key; allowed keys here:" in message


def test_an_unknown_section_is_named():
    message = _error({"compresion": {}})
    assert "compresion: unknown key" in message
    assert "compression" in message


def test_a_wrong_type_is_named_with_the_value_given():
    message = _error({"compression": {"protect_last_n": "twenty"}})
    assert "compression.protect_last_n" in message
    assert "'twenty'" in message


def test_a_string_number_is_a_wrong_type_not_silently_converted():
    assert "compression.threshold" in _error({"compression": {"threshold": "0.5"}})


def test_an_out_of_range_value_is_named_with_its_bound():
    message = _error({"compression": {"threshold": 1.5}})
    assert "compression.threshold" in message
    assert "less than or equal to 1" in message


def test_an_enumerated_value_lists_the_allowed_values():
    message = _error({"compression": {"codex_app_server_auto": "sometimes"}})
    assert "'native', 'managed' or 'off'" in message


def test_inconsistent_timeouts_are_refused():
    message = _error(
        {"compression": {"hygiene_timeout_seconds": 60, "hygiene_total_ceiling_seconds": 30}}
    )
    assert "hygiene_total_ceiling_seconds must be at least hygiene_timeout_seconds" in message


def test_a_model_threshold_needs_a_ratio_or_a_cap():
    assert "model_thresholds" in _error({"compression": {"model_thresholds": {"glm": {}}}})


def test_every_error_is_reported_at_once():
    message = _error({"compression": {"threshold": 2, "max_attempts": 0}})
    assert "compression.threshold" in message and "compression.max_attempts" in message


def test_a_file_that_is_not_a_mapping_is_refused(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="mapping"):
        load_config(path)


def test_invalid_yaml_is_refused_with_its_position(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("compression: [unclosed\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(path)


def test_an_empty_file_means_defaults(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("", encoding="utf-8")
    assert load_config(path) == HermesConfig()


def test_the_path_comes_from_the_environment(tmp_path, monkeypatch):
    path = tmp_path / "elsewhere.yaml"
    path.write_text("compression: {enabled: false}\n", encoding="utf-8")
    monkeypatch.setenv("HERMES_CONFIG", str(path))
    assert config_path(tmp_path) == path
    monkeypatch.setenv("HERMES_CONFIG", str(tmp_path / "missing.yaml"))
    with pytest.raises(ConfigError, match="no such file"):
        config_path(tmp_path)


def test_a_bad_config_stops_the_service_with_the_key_named(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(
        f"server: {{data_dir: {tmp_path}}}\ncompression: {{max_attempts: 99}}\n", encoding="utf-8"
    )
    env = {**os.environ, "HERMES_CONFIG": str(path)}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    assert "compression.max_attempts" in result.stderr
    assert "less than or equal to 10" in result.stderr


def test_the_example_file_holds_every_key_at_its_default():
    import yaml
    from pydantic import BaseModel

    data = yaml.safe_load((ROOT / "hermes.example.yaml").read_text(encoding="utf-8"))
    assert parse_config(data) == HermesConfig()

    def missing(model: type[BaseModel], section: dict, prefix: str) -> list[str]:
        out = []
        for name, field in model.model_fields.items():
            if name not in section:
                out.append(prefix + name)
            elif isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
                out += missing(field.annotation, section[name], f"{prefix}{name}.")
        return out

    assert missing(HermesConfig, data, "") == []


def test_a_whole_hermes_agent_config_loads_ignoring_sections_this_service_does_not_use():
    config = parse_config(
        {
            "model": {"default": "glm-5.2"},
            "terminal": {"backend": "local"},
            "toolsets": ["web", "file"],
            "auxiliary": {"vision": {"model": "x"}, "compression": {"model": "s"}},
            "compression": {"threshold": 0.4},
        }
    )
    assert config.model.default == "glm-5.2"
    assert config.auxiliary.compression.model == "s"
    assert config.compression.threshold == 0.4


def test_a_misspelt_section_is_still_refused():
    assert "auxilary: unknown key" in _error({"auxilary": {}})
    assert "compresion: unknown key" in _error({"compresion": {}})


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"server": {"sqlite_busy_timeout_seconds": float("inf")}}, "sqlite_busy_timeout_seconds"),
        ({"compression": {"failure_cooldown_seconds": float("nan")}}, "failure_cooldown_seconds"),
        ({"server": {"time_zone": "Mars/Olympus"}}, "server.time_zone"),
    ],
)
def test_infinite_numbers_and_unknown_time_zones_are_refused(data, key):
    assert key in _error(data)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("sqlite_prewarm_mib", -1),
        ("sqlite_cache_mib", 1),
        ("sqlite_mmap_mib", -1),
        ("db_conn_max_age", -1),
        ("db_conn_max_age", 86_401),
    ],
)
def test_sqlite_memory_and_connection_settings_out_of_range_are_refused_by_name(key, value):
    assert f"server.{key}" in _error({"server": {key: value}})


def test_a_task_retry_not_above_its_timeout_is_refused():
    message = _error({"server": {"task_timeout_seconds": 300, "task_retry_seconds": 300}})
    assert "task_retry_seconds (300) must exceed task_timeout_seconds (300)" in message


@pytest.mark.parametrize(
    ("key", "value", "hint"),
    [
        ("database_url", "mysql://root@localhost/hermes", "postgres://"),
        ("database_url", "just-a-name", "postgres://"),
        ("broker_url", "amqp://guest@localhost//", "redis://"),
    ],
)
def test_database_and_broker_urls_must_name_a_supported_server(key, value, hint):
    message = _error({"server": {key: value}})
    assert f"server.{key}" in message and hint in message


def _start(tmp_path: Path, server: str, **env_vars: str) -> subprocess.CompletedProcess:
    path = tmp_path / "hermes.yaml"
    path.write_text(f"server:\n  data_dir: {tmp_path}\n{server}", encoding="utf-8")
    env = {**os.environ, "HERMES_CONFIG": str(path), **env_vars}
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_retry_below_the_sized_task_timeout_stops_start_up(tmp_path):
    result = _start(tmp_path, "  task_retry_seconds: 60\n")
    assert result.returncode != 0
    assert "task_retry_seconds (60) must exceed the task timeout" in result.stderr


@pytest.mark.slow  # a process per setting: 7 s
def test_the_environment_chooses_the_database_and_broker(tmp_path):
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.DATABASES['default']['ENGINE'], s.DATABASES['default']['NAME'], "
        "s.Q_CLUSTER.get('redis'), s.Q_CLUSTER.get('orm'))"
    )
    path = tmp_path / "hermes.yaml"
    path.write_text(f"server:\n  data_dir: {tmp_path}\n", encoding="utf-8")
    base = {
        **os.environ,
        "HERMES_CONFIG": str(path),
        "DJANGO_SETTINGS_MODULE": "hermes_site.settings",
    }
    for name in ("HERMES_DATABASE_URL", "HERMES_BROKER_URL"):
        base.pop(name, None)

    def settings_with(**env_vars: str) -> str:
        return subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env={**base, **env_vars},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout.strip()

    assert settings_with() == f"core.sqlite_backend {tmp_path}/hermes.sqlite3 None default"
    assert (
        settings_with(
            HERMES_DATABASE_URL="postgres://u:p@db.example:5433/mem",
            HERMES_BROKER_URL="redis://cache.example:6379/2",
        )
        == "core.postgresql_backend mem redis://cache.example:6379/2 None"
    )
    assert settings_with(HERMES_DATABASE_URL=f"sqlite:///{tmp_path}/other.sqlite3") == (
        f"core.sqlite_backend {tmp_path}/other.sqlite3 None default"
    )
    relative = settings_with(HERMES_DATABASE_URL="sqlite:///var/other.sqlite3")
    assert relative == f"core.sqlite_backend {ROOT}/var/other.sqlite3 None default"
    for junk, message in (
        ("sqlite://", "needs a file"),
        ("sqlitex://x/y", "server.database_url"),
        ("mysql://u@h/db", "only PostgreSQL"),
    ):
        result = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env={**base, "HERMES_DATABASE_URL": junk},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode != 0 and message in result.stderr, (junk, result.stderr[-400:])
        assert "ImproperlyConfigured: server.database_url" in result.stderr, junk


def test_the_postgresql_pass_really_runs_on_postgresql_and_redis():
    """./bin/test's second pass sets HERMES_DATABASE_URL and HERMES_BROKER_URL; this makes sure
    the suite then talks to both for real rather than quietly falling back to the defaults."""
    if not os.environ.get("HERMES_DATABASE_URL"):
        pytest.skip("runs in the PostgreSQL pass of ./bin/test (HERMES_DATABASE_URL is not set)")
    import redis
    from django.conf import settings
    from django.db import connection

    assert connection.vendor == "postgresql"
    assert settings.Q_CLUSTER["redis"] == os.environ["HERMES_BROKER_URL"]
    assert "orm" not in settings.Q_CLUSTER
    assert redis.Redis.from_url(settings.Q_CLUSTER["redis"]).ping()


def test_the_codex_app_server_url_must_be_a_websocket_address():
    message = _error({"compression": {"codex_app_server_url": "http://127.0.0.1:8390"}})
    assert "compression.codex_app_server_url" in message and "ws://HOST:PORT" in message


@pytest.mark.slow  # a process per setting: 3 s
def test_a_served_process_keeps_its_database_connection_on_sqlite_as_on_postgresql(tmp_path):
    # Opening a SQLite connection per request ran its PRAGMAs and emptied its page cache: a
    # quarter of a search's time in a web process. Tests keep one per request (conn_max_age 0).
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "d = s.DATABASES['default']; print(d['CONN_MAX_AGE'], d['CONN_HEALTH_CHECKS'])"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "hermes_site.settings"}
    env.pop("HERMES_DATABASE_URL", None)

    def kept(server: str, **env_vars: str) -> str:
        path = tmp_path / "hermes.yaml"
        path.write_text(f"server:\n  data_dir: {tmp_path}\n{server}", encoding="utf-8")
        return subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env={**env, "HERMES_CONFIG": str(path), **env_vars},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout.strip()

    assert kept("") == "3600 True"
    assert kept("  db_conn_max_age: 0\n") == "0 True"
    assert kept("  db_conn_max_age: 5\n", HERMES_DATABASE_URL="postgres://u@h:5432/m") == "5 True"


@pytest.mark.slow  # a process: 2 s
def test_a_web_process_loads_every_route_and_starts_its_threads_before_its_first_request(tmp_path):
    # Django imports the URLconf (every view, router and schema: half a second) on a process's
    # first request; gunicorn's post_worker_init loads it first, so no client's request waits.
    # It starts the request threads too, which warm their connections -- here, on a database not
    # migrated yet, they fail to and the process starts all the same (tests/test_warm_connections).
    code = (
        "import sys, django; django.setup(); "
        "from concurrent.futures import ThreadPoolExecutor; from types import SimpleNamespace; "
        "before = 'sessions_app.api.routes' in sys.modules; "
        "worker = SimpleNamespace(tpool=ThreadPoolExecutor(2), cfg=SimpleNamespace(threads=2)); "
        "from hermes_site import gunicorn_conf; gunicorn_conf.post_worker_init(worker); "
        "gunicorn_conf.post_worker_init(SimpleNamespace()); "  # a worker without threads (-k sync)
        "import re; from django.urls import resolve; compiled = []; real = re.compile; "
        "re.compile = lambda *a, **k: compiled.append(a) or real(*a, **k); "
        "resolve('/api/v1/search'); resolve('/api/v1/sessions/abc/context'); "
        "print(before, 'sessions_app.api.routes' in sys.modules, 'search.api' in sys.modules, "
        "len(worker.tpool._threads), len(compiled))"
    )
    path = tmp_path / "hermes.yaml"
    path.write_text(f"server:\n  data_dir: {tmp_path}\n", encoding="utf-8")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "hermes_site.settings",
        "HERMES_CONFIG": str(path),
    }
    # ...and its routes' patterns compiled: matching a request compiles none.
    assert python("-c", code, env=env, timeout=120).strip() == "False True True 2 0"
