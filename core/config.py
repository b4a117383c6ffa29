"""The one configuration file, its schema and its loader.

Every compression knob lives in the file's ``compression:`` block under the key names of Hermes
Agent's own ``config.yaml``, so an operator can point the service at a config they already have.
Only the file's *path* comes from the environment (``HERMES_CONFIG``); with no file the
documented defaults apply. The schema is strict for every key the service uses: a misspelt key, a
wrong type or an out-of-range value stops start-up with a message naming the key and what is
allowed. A Hermes Agent file's other keys are accepted and named in one warning line
(``hermes_compat``).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from pydantic import (
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from core.config_blocks import Block as _Block
from core.config_blocks import (
    EventsConfig,
    KeysConfig,
    MemoryConfig,
    RecallConfig,
    RedactionConfig,
    RetentionConfig,
    ScoringConfig,
    SearchConfig,
    token_shape,
)
from core.config_errors import describe, schema_keys
from core.config_hooks import HooksConfig
from core.hermes_compat import Adapted, adapt

logger = logging.getLogger(__name__)

CONFIG_ENV_VAR = "HERMES_CONFIG"
DEFAULT_CONFIG_FILENAME = "hermes.yaml"

Ratio = Annotated[float, Field(gt=0, le=1)]
Seconds = Annotated[float, Field(ge=0)]
PositiveInt = Annotated[int, Field(ge=1)]
CapTokens = Annotated[int, Field(ge=1000)]  # a smaller cap would compress on every check


class ConfigError(Exception):
    """The configuration file cannot be used; the message says which key and why."""


class ModelThreshold(_Block):
    """Long form of a ``model_thresholds`` entry: a ratio and/or an absolute cap."""

    ratio: Ratio | None = None
    threshold_tokens: CapTokens | None = None

    @model_validator(mode="after")
    def _one_of(self) -> ModelThreshold:
        if self.ratio is None and self.threshold_tokens is None:
            raise ValueError("give at least one of 'ratio' or 'threshold_tokens'")
        return self


class CompressionConfig(_Block):
    """SPEC section 8. Key names follow Hermes Agent's ``compression:`` block."""

    # Thresholds (T1, T8)
    enabled: bool = True
    threshold: Ratio = 0.50
    threshold_tokens: CapTokens | None = None
    threshold_floor_tokens: PositiveInt = 64_000
    small_window_limit_tokens: PositiveInt = 512_000
    small_window_threshold: Ratio = 0.75
    floor_reaches_window_ratio: Ratio = 0.85
    reasoning_threshold: Ratio = 0.85
    reasoning_model_patterns: tuple[str, ...] = (
        "o1",
        "o3",
        "o4-mini",
        "deepseek-r1",
        "deepseek-reasoner",
        "qwq",
        "-thinking",
        "reasoner",
    )
    model_thresholds: dict[str, Ratio | ModelThreshold] = Field(default_factory=dict)
    output_reserve_tokens: Annotated[int, Field(ge=0)] = 0

    # Output shape (C1-C3, L1, L3)
    target_ratio: Annotated[float, Field(ge=0.10, le=0.80)] = 0.20
    summary_min_tokens: PositiveInt = 2_000
    summary_max_tokens: PositiveInt = 10_000
    # The budget never exceeds this share of the session's context window (Hermes Agent's 5%).
    summary_window_ratio: Ratio = 0.05
    summary_message_max_chars: PositiveInt = 6_000
    summary_input_max_chars: PositiveInt = 160_000
    fallback_summary_max_chars: PositiveInt = 8_000
    protect_first_n: Annotated[int, Field(ge=0)] = 3
    protect_last_n: Annotated[int, Field(ge=1)] = 20
    min_tail_user_messages: Annotated[int, Field(ge=0)] = 1
    max_attempts: Annotated[int, Field(ge=1, le=10)] = 3
    in_place: bool = True
    abort_on_summary_failure: bool = False

    # Failure protection (F1-F3)
    failure_cooldown_seconds: Seconds = 600
    anti_thrash_min_savings: Ratio = 0.10
    anti_thrash_consecutive: PositiveInt = 2
    anti_thrash_lock_seconds: Seconds = 300
    anti_thrash_max_compressions: PositiveInt = 4
    anti_thrash_window_seconds: Seconds = 600
    exhaustion_failure_limit: PositiveInt = 3

    # Idle (T3)
    idle_compact_after_seconds: Seconds = 0

    # Proactive pruning (T7d)
    proactive_prune_tokens: Annotated[int, Field(ge=0)] = 0
    proactive_prune_min_result_chars: Annotated[int, Field(ge=200)] = 8_000
    proactive_prune_min_reclaim_tokens: Annotated[int, Field(ge=0)] = 4_096

    # Micro-compaction (T7c)
    micro_compact: bool = False
    micro_compact_every_n_turns: PositiveInt = 1
    micro_compact_defrag_threshold_tokens: PositiveInt = 2_000

    # Gateway hygiene (T2, G1, G2)
    hygiene_hard_message_limit: PositiveInt = 5_000
    hygiene_timeout_seconds: Seconds = 30
    hygiene_total_ceiling_seconds: Seconds = 600
    hygiene_failure_cooldown_seconds: Seconds = 300
    hygiene_max_turn_hold_seconds: Seconds = 10

    # Compression call timeouts
    context_timeout_seconds: Seconds = 120
    context_total_ceiling_seconds: Seconds = 600

    # Model and service paths (T7a, T7b)
    codex_app_server_auto: Literal["native", "managed", "off"] = "native"
    # How to reach the app server for "managed" (its stdio JSON-RPC protocol).
    codex_app_server_command: tuple[str, ...] = ("codex", "app-server")
    # ...or, when set, the app server a gateway already runs with --listen ws://HOST:PORT.
    codex_app_server_url: str = ""
    codex_app_server_timeout_seconds: Seconds = 300
    codex_responses_native: bool = False
    codex_responses_compact_threshold: PositiveInt | None = None
    # Model families that get OpenAI's server-side compaction when codex_responses_native is on.
    codex_responses_models: tuple[str, ...] = ("gpt-5", "codex")

    # Compaction hooks; with checkpoint_required a failing pre-compact hook stops a compression.
    hooks: HooksConfig = Field(default_factory=HooksConfig)
    checkpoint_required: bool = False
    # Secret shapes masked in what leaves for a summariser, a hook or server-side compaction.
    redaction: RedactionConfig = Field(default_factory=RedactionConfig)
    # Every written summary scored against its originals; under the floor it is flagged.
    scoring: ScoringConfig = Field(default_factory=ScoringConfig)
    # legacy: the last protect_last_n messages (the seed); lean: Hermes's default (engine/tail.py)
    tail_mode: Literal["lean", "legacy"] = "legacy"
    progress_notices: bool = False
    # Accepted so an existing Hermes Agent config loads unchanged; not used by this service.
    codex_gpt55_autoraise: bool = True
    codex_gpt55_autoraise_notice: bool = True

    @field_validator("codex_app_server_url")
    @classmethod
    def _websocket_url(cls, value: str) -> str:
        if value and not value.startswith(("ws://", "wss://")):
            raise ValueError("expected ws://HOST:PORT (the app server's --listen address)")
        return value

    @field_validator("codex_app_server_auto", mode="before")
    @classmethod
    def _hermes_alias(cls, value: Any) -> Any:
        # Hermes Agent calls the managed strategy "hermes".
        return "managed" if value == "hermes" else value

    @field_validator(
        "reasoning_model_patterns",
        "codex_app_server_command",
        "codex_responses_models",
        mode="before",
    )
    @classmethod
    def _list_to_tuple(cls, value: Any) -> Any:
        return tuple(value) if isinstance(value, list) else value

    @model_validator(mode="after")
    def _consistent(self) -> CompressionConfig:
        if self.summary_min_tokens > self.summary_max_tokens:
            raise ValueError(
                "summary_min_tokens must not exceed summary_max_tokens "
                f"(got {self.summary_min_tokens} > {self.summary_max_tokens})"
            )
        if self.hygiene_total_ceiling_seconds < self.hygiene_timeout_seconds:
            raise ValueError(
                "hygiene_total_ceiling_seconds must be at least hygiene_timeout_seconds "
                f"(got {self.hygiene_total_ceiling_seconds} < {self.hygiene_timeout_seconds})"
            )
        if (
            self.context_timeout_seconds > 0
            and self.context_total_ceiling_seconds < self.context_timeout_seconds
        ):
            raise ValueError(
                "context_total_ceiling_seconds must be at least context_timeout_seconds "
                f"(got {self.context_total_ceiling_seconds} < {self.context_timeout_seconds})"
            )
        for pattern in self.model_thresholds:
            if not pattern.strip():
                raise ValueError("model_thresholds keys must be non-empty model-name substrings")
        return self


class ChatModelConfig(_Block):
    """The agent's chat model (Hermes Agent's top-level ``model:`` block)."""

    default: str = ""
    provider: str = "auto"
    base_url: str = ""
    api_key: str = ""
    context_length: PositiveInt | None = None
    timeout_seconds: Annotated[float, Field(gt=0)] = 1800
    stale_timeout_seconds: Annotated[float, Field(gt=0)] = 90

    @model_validator(mode="before")
    @classmethod
    def _model_alias(cls, data: Any) -> Any:
        # Hermes Agent accepts both ``model.default`` and ``model.model``.
        if isinstance(data, dict) and "model" in data:
            data = dict(data)
            name = data.pop("model")
            data.setdefault("default", name)
        return data


class SummaryModelConfig(_Block):
    """The summariser (Hermes Agent's ``auxiliary.compression``). Empty model = local summary."""

    provider: str = "auto"
    model: str = ""
    base_url: str = ""
    api_key: str = ""
    timeout: Annotated[float, Field(gt=0)] = 120
    extra_body: dict[str, Any] = Field(default_factory=dict)
    reasoning_effort: str = ""
    # Hermes Agent's names: chat completions, or the Responses API (Codex-style providers).
    api_mode: Literal["chat_completions", "codex_responses"] = "chat_completions"

    @property
    def configured(self) -> bool:
        return bool(self.model and self.base_url)


class AuxiliaryConfig(_Block):
    compression: SummaryModelConfig = Field(default_factory=SummaryModelConfig)


DATABASE_SCHEMES = ("postgres", "postgresql", "pgsql", "sqlite")


def bind_address(value: str) -> str:
    """``value`` if the web server can listen on it (``server.bind``, ``$HERMES_ADDR``), else a
    ValueError saying what is expected: a port beyond 65535 passed as digits and only failed in
    gunicorn, with its traceback."""
    host, sep, port = value.rpartition(":")
    if value.startswith("unix:") or (sep and host and port.isdigit() and int(port) <= 65535):
        return value
    raise ValueError(
        "expected HOST:PORT with a port from 0 to 65535 (127.0.0.1:8000, 0.0.0.0:8000) or "
        "unix:/path/to.sock"
    )


class ServerConfig(_Block):
    """Deployment settings of this service (not part of Hermes Agent's file)."""

    debug: bool = False
    secret_key: str = ""
    allowed_hosts: tuple[str, ...] = ("localhost", "127.0.0.1", "[::1]")
    data_dir: str = "var"
    time_zone: str = "UTC"
    max_message_bytes: Annotated[int, Field(ge=1024)] = 1024 * 1024
    max_request_bytes: Annotated[int, Field(ge=1024)] = 16 * 1024 * 1024
    sqlite_busy_timeout_seconds: Annotated[float, Field(gt=0)] = 20
    # A connection drops its whole page cache, and SQLite unmaps its whole memory map, on its
    # first read after another connection wrote: in a service whose gateways append all the
    # time a large cache or a map is rebuilt over and over (a read after a write that followed a
    # search paid 6.6 ms with a 64 MiB cache, 22 ms with the map). The OS page cache, which
    # every connection shares and the prewarm fills, holds the database instead.
    sqlite_cache_mib: Annotated[int, Field(ge=2, le=4096)] = 8
    sqlite_mmap_mib: Annotated[int, Field(ge=0, le=65536)] = 0
    # A web process asks the OS to read the SQLite file into its page cache when it starts, if
    # the file is at most this big and half the memory available (0: never): a query's first
    # lookup then reads no page from disk (search.warm).
    sqlite_prewarm_mib: Annotated[int, Field(ge=0)] = 8192
    default_context_window: PositiveInt = 128_000
    q_workers: Annotated[int, Field(ge=1, le=64)] = 2
    # bin/serve (manage.py serve): the web server and its address, processes and threads per
    # process. granian (HTTP in Rust) took 0.25 ms less of a search request than gunicorn (all
    # Python) at p95 here, each as deployed; gunicorn answers even a request it cannot parse
    # with JSON (docs/deployment.md). Sized for SQLite WAL, which takes one writer at a time: a few
    # processes with some threads each; on PostgreSQL raise web_workers (about 2 x cores).
    # $HERMES_ADDR overrides bind.
    web_server: Literal["granian", "gunicorn"] = "granian"
    bind: str = "127.0.0.1:8000"
    web_workers: Annotated[int, Field(ge=1, le=64)] = 2
    web_threads: Annotated[int, Field(ge=1, le=64)] = 4
    # How long a stop may take: requests in flight finish and the worker hands back its tasks
    # within this; whatever still runs after it is killed.
    stop_timeout_seconds: Annotated[int, Field(ge=2, le=300)] = 8
    # Scale-out (docs/deployment.md). Empty: SQLite in data_dir and django-q2's ORM broker.
    database_url: str = ""  # postgres://user:password@host:5432/name
    broker_url: str = ""  # redis://host:6379/0
    # Each thread's connection is opened again after this many seconds of age (not idleness):
    # the request that reopens it pays for a new connection and a cold cache (docs/deployment.md).
    db_conn_max_age: Annotated[int, Field(ge=0, le=86400)] = 3600
    # bin/serve: each web thread opens its connection and runs the search's statements on it
    # before its first request, and again after the answer that closed it for its age, so no
    # request waits for a new connection (hermes_site.warm). Off: opened by the first request.
    warm_connections: bool = True
    # django-q2 gives a task `timeout` seconds and hands it to another worker after `retry`; empty
    # means sized from compression.max_attempts and the model ceiling. retry must exceed timeout.
    task_timeout_seconds: Annotated[int, Field(ge=10)] | None = None
    task_retry_seconds: Annotated[int, Field(ge=20)] | None = None
    # GET /metrics: with a token, only "Authorization: Bearer <token>" may read it (from any
    # address); empty, only loopback clients may (docs/operations.md#metrics).
    metrics_token: str = ""
    # "json": one JSON object per log line, with a line per request and per compression.
    log_format: Literal["text", "json"] = "text"

    @field_validator("metrics_token")
    @classmethod
    def _token_shape(cls, value: str) -> str:
        return token_shape(value)

    @field_validator("database_url")
    @classmethod
    def _database_scheme(cls, value: str) -> str:
        scheme = value.split("://", 1)[0].lower() if "://" in value else ""
        if value and scheme not in DATABASE_SCHEMES:
            raise ValueError(
                "expected postgres://user:password@host:5432/name or sqlite:///path/to/file"
            )
        return value

    @field_validator("bind")
    @classmethod
    def _bind_address(cls, value: str) -> str:
        return bind_address(value)

    @field_validator("broker_url")
    @classmethod
    def _broker_scheme(cls, value: str) -> str:
        if value and value.split("://", 1)[0].lower() not in ("redis", "rediss", "unix"):
            raise ValueError("expected redis://host:6379/0 (or rediss://, unix://)")
        return value

    @model_validator(mode="after")
    def _retry_after_timeout(self) -> ServerConfig:
        timeout, retry = self.task_timeout_seconds, self.task_retry_seconds
        if timeout is not None and retry is not None and retry <= timeout:
            raise ValueError(
                f"task_retry_seconds ({retry}) must exceed task_timeout_seconds ({timeout}), "
                "or a task still running would be started again by another worker"
            )
        return self

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _list_to_tuple(cls, value: Any) -> Any:
        return tuple(value) if isinstance(value, list) else value

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError("not a time zone name like 'UTC' or 'Europe/Berlin'") from None
        return value


class HermesConfig(_Block):
    model: ChatModelConfig = Field(default_factory=ChatModelConfig)
    auxiliary: AuxiliaryConfig = Field(default_factory=AuxiliaryConfig)
    compression: CompressionConfig = Field(default_factory=CompressionConfig)
    search: SearchConfig = Field(default_factory=SearchConfig)
    events: EventsConfig = Field(default_factory=EventsConfig)
    recall: RecallConfig = Field(default_factory=RecallConfig)
    retention: RetentionConfig = Field(default_factory=RetentionConfig)
    keys: KeysConfig = Field(default_factory=KeysConfig)
    memory_blocks: MemoryConfig = Field(default_factory=MemoryConfig)
    server: ServerConfig = Field(default_factory=ServerConfig)


def parse_config(
    data: Any, source: str = "<config>", *, adapted: list[Adapted] | None = None
) -> HermesConfig:
    """Validate already-parsed YAML data; raise ConfigError naming every bad key.

    A Hermes Agent file is read as Hermes reads it (``hermes_compat``): legacy keys folded, the
    sections and keys this service does not use set aside and named in one warning line. Pass
    ``adapted`` (a list) to receive what was set aside and moved."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        kind = type(data).__name__
        raise ConfigError(f"{source}: the file must hold a mapping of sections, not {kind}")
    keys = schema_keys(HermesConfig)
    data, changes = adapt(data, keys)
    if adapted is not None:
        adapted.append(changes)
    if changes.unused:
        logger.warning(
            "%s: accepted but not used by this service: %s", source, ", ".join(changes.unused)
        )
    if changes.foreign_sections:
        # Ninety-odd sections of a full Hermes file: worth a line only when debugging.
        logger.debug(
            "%s: sections for Hermes Agent alone, ignored here: %s",
            source,
            ", ".join(changes.foreign_sections),
        )
    try:
        return HermesConfig.model_validate(data)
    except ValidationError as exc:
        lines = [describe(err, keys) for err in exc.errors()]
        raise ConfigError(f"{source}: invalid configuration:\n  " + "\n  ".join(lines)) from None


def config_path(base_dir: Path) -> Path | None:
    """The config file to load: $HERMES_CONFIG, else ./hermes.yaml if present, else none."""
    explicit = os.environ.get(CONFIG_ENV_VAR)
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_absolute():
            path = Path.cwd() / path
        if not path.is_file():
            raise ConfigError(f"{CONFIG_ENV_VAR}={explicit}: no such file")
        return path
    candidate = base_dir / DEFAULT_CONFIG_FILENAME
    return candidate if candidate.is_file() else None


def load_config(path: Path | None) -> HermesConfig:
    if path is None:
        return HermesConfig()
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    return parse_config(data, str(path))


def get_config() -> HermesConfig:
    """The active configuration (read through Django settings so tests can override it)."""
    from django.conf import settings

    return settings.HERMES
