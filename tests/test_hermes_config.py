"""A real Hermes Agent config.yaml starts the service: its unused keys are named once, its legacy
keys folded as Hermes folds them, and the keys the service uses stay strict."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from compression.policy.threshold import Override, compute_threshold, match_override
from core.config import CompressionConfig, ConfigError, load_config, parse_config

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "hermes"


def _full() -> dict:
    return yaml.safe_load((DATA / "config_full.yaml").read_text(encoding="utf-8"))


def _parse(data: dict):
    adapted: list = []
    return parse_config(data, "config.yaml", adapted=adapted), adapted[0]


def test_every_section_hermes_writes_loads_and_the_blocks_we_use_take_effect():
    data = _full()
    assert len(data) > 90  # every section of Hermes's defaults
    data["compression"]["threshold"] = 0.42
    config, adapted = _parse(data)
    assert config.model.default == "anthropic/claude-opus-4.6"
    assert config.model.provider == "openrouter"
    assert config.compression.threshold == 0.42
    assert config.compression.protect_last_n == 20
    assert "terminal" in adapted.foreign_sections and "x_search" in adapted.foreign_sections
    assert "auxiliary.vision" in adapted.foreign_sections


def test_the_lean_file_a_current_hermes_writes_loads(monkeypatch):
    monkeypatch.setenv("HERMES_CUSTOM_127_0_0_1_8000_API_KEY", "sk-from-env")
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or")
    config = load_config(DATA / "config_lean.yaml")
    assert config.model.api_key == "sk-from-env"
    assert config.model.context_length == 131072
    assert config.compression.model_thresholds == {"glm-5.2": 0.40, "openrouter:glm-5.2": 0.35}
    summariser = config.auxiliary.compression
    assert (summariser.model, summariser.base_url) == (
        "google/gemini-3-flash-preview",
        "https://openrouter.ai/api/v1",
    )
    assert summariser.api_key == "sk-or" and summariser.timeout == 180


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("model", "api_mode", "chat_completions"),
        ("model", "streaming", False),
        ("model", "ollama_num_ctx", 32768),
        ("model", "default_headers", {"User-Agent": "curl/8.7.1"}),
        ("auxiliary.compression", "context_length", 1_048_576),
        ("auxiliary.compression", "fallback_chain", []),
    ],
)
def test_a_key_hermes_has_and_this_service_does_not_use_is_accepted_and_named(
    section, key, value, caplog
):
    data = _full()
    block = data
    for part in section.split("."):
        block = block[part]
    block[key] = value
    with caplog.at_level(logging.WARNING, logger="core.config"):
        _, adapted = _parse(data)
    assert adapted.unused == [f"{section}.{key}"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert f"{section}.{key}" in warnings[0] and "not used by this service" in warnings[0]


def test_all_unused_keys_share_one_warning_line(caplog):
    data = {
        "model": {"default": "m", "api_mode": "codex_responses", "streaming": True},
        "auxiliary": {"compression": {"context_length": 200000}},
    }
    with caplog.at_level(logging.WARNING, logger="core.config"):
        parse_config(data, "config.yaml")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "config.yaml: accepted but not used by this service: model.api_mode, model.streaming, "
        "auxiliary.compression.context_length"
    ]


def test_model_key_env_reads_the_key_from_the_environment(monkeypatch):
    monkeypatch.setenv("MY_ENDPOINT_API_KEY", "sk-123")
    config, adapted = _parse({"model": {"default": "m", "key_env": "MY_ENDPOINT_API_KEY"}})
    assert config.model.api_key == "sk-123"
    assert any("key_env" in line for line in adapted.moved)
    monkeypatch.delenv("MY_ENDPOINT_API_KEY")
    assert parse_config({"model": {"api_key_env": "MY_ENDPOINT_API_KEY"}}).model.api_key == ""
    written = {"model": {"api_key": "inline", "key_env": "MY_ENDPOINT_API_KEY"}}
    assert parse_config(written).model.api_key == "inline"  # a written key wins


def test_variable_references_are_expanded_and_unknown_ones_kept(monkeypatch):
    monkeypatch.setenv("SUMMARY_KEY", "sk-sum")
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    config = parse_config(
        {
            "model": {"api_key": "${env:SUMMARY_KEY}", "base_url": "${NOT_SET_ANYWHERE}"},
            "auxiliary": {"compression": {"api_key": "${SUMMARY_KEY}"}},
        }
    )
    assert config.model.api_key == "sk-sum"
    assert config.model.base_url == "${NOT_SET_ANYWHERE}"
    assert config.auxiliary.compression.api_key == "sk-sum"


def test_the_legacy_summary_keys_move_to_the_summariser_as_hermes_migration_17_does():
    config, adapted = _parse(
        {
            "compression": {
                "summary_model": "google/gemini-3-flash-preview",
                "summary_provider": "auto",
                "summary_base_url": "http://127.0.0.1:9/v1",
                "threshold": 0.5,
            }
        }
    )
    summariser = config.auxiliary.compression
    assert summariser.model == "google/gemini-3-flash-preview"
    assert summariser.base_url == "http://127.0.0.1:9/v1"
    assert summariser.provider == "auto"
    assert len([m for m in adapted.moved if m.startswith("compression.summary_")]) == 3
    # The summariser's own keys win over the legacy ones.
    kept = parse_config(
        {"compression": {"summary_model": "old"}, "auxiliary": {"compression": {"model": "new"}}}
    )
    assert kept.auxiliary.compression.model == "new"


def test_legacy_root_keys_and_model_aliases_fold_into_the_model_block():
    config = parse_config(
        {
            "model": {"name": "gpt-4o"},
            "provider": "openrouter",
            "api_base": "https://openrouter.ai/api/v1",
            "context_length": 200000,
            "max_turns": 60,
        }
    )
    assert config.model.default == "gpt-4o"
    assert config.model.provider == "openrouter"
    assert config.model.base_url == "https://openrouter.ai/api/v1"
    assert config.model.context_length == 200000
    assert parse_config({"model": "glm-5.2"}).model.default == "glm-5.2"
    flattened = parse_config({"model": {"default": {"provider": "zai", "model": "glm-5.2"}}})
    assert (flattened.model.default, flattened.model.provider) == ("glm-5.2", "zai")


def test_provider_main_summarises_with_the_chat_models_endpoint():
    config = parse_config(
        {
            "model": {"default": "glm-5.2", "base_url": "http://127.0.0.1:9/v1", "api_key": "k"},
            "auxiliary": {"compression": {"provider": "main"}},
        }
    )
    summariser = config.auxiliary.compression
    assert (summariser.model, summariser.base_url, summariser.api_key) == (
        "glm-5.2",
        "http://127.0.0.1:9/v1",
        "k",
    )


def test_an_auto_summariser_is_local_here_and_the_adapter_says_so():
    config, adapted = _parse(_full())
    assert not config.auxiliary.compression.configured
    assert any("'auto'" in note and "local" in note for note in adapted.notes)


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ({"compression": {"threshold": "high"}}, "compression.threshold"),
        ({"compression": {"treshold": 0.5}}, "compression.treshold: unknown key"),
        ({"model": {"context_length": "256K"}}, "model.context_length"),
        ({"model": {"defualt": "gpt-4o"}}, "model.defualt: unknown key"),
        ({"auxiliary": {"compression": {"timeout": -1}}}, "auxiliary.compression.timeout"),
        ({"auxiliary": {"compresion": {}}}, "auxiliary.compresion: unknown key"),
        ({"compresion": {}}, "compresion: unknown key"),
        ({"server": {"debugg": True}}, "server.debugg: unknown key"),
    ],
)
def test_the_keys_the_service_uses_stay_strict_in_a_hermes_file(data, named):
    full = _full()
    for section, block in data.items():
        full[section] = (
            {**full.get(section, {}), **block}
            if section != "auxiliary"
            else {
                **full["auxiliary"],
                **{k: {**full["auxiliary"].get(k, {}), **v} for k, v in block.items()},
            }
        )
    with pytest.raises(ConfigError) as info:
        parse_config(full, "config.yaml")
    assert named in str(info.value)


def _override(pattern: str, ratio: float) -> Override:
    return Override(pattern, ratio, None, "config")


def test_a_provider_scoped_threshold_applies_only_on_that_provider():
    overrides = [_override("glm-5.2", 0.40), _override("openrouter:glm-5.2", 0.35)]
    assert match_override("z-ai/glm-5.2", overrides, "openrouter").ratio == 0.35
    assert match_override("z-ai/glm-5.2", overrides, "OpenRouter").ratio == 0.35
    assert match_override("z-ai/glm-5.2", overrides, "zai").ratio == 0.40
    assert match_override("z-ai/glm-5.2", overrides).ratio == 0.40
    # Longest substring first: a longer bare key beats a shorter scoped one.
    longer = [_override("openrouter:glm", 0.3), _override("glm-5.2", 0.4)]
    assert match_override("glm-5.2", longer, "openrouter").ratio == 0.4
    # An Ollama-style name with a colon still matches as written.
    assert match_override("qwen3:32b", [_override("qwen3:32b", 0.6)], "custom").ratio == 0.6


def test_the_provider_scoped_ratio_reaches_the_threshold():
    config = CompressionConfig(model_thresholds={"openrouter:glm-5.2": 0.35})
    overrides = [_override("openrouter:glm-5.2", 0.35)]
    scoped = compute_threshold("glm-5.2", 1_000_000, config, overrides, provider="openrouter")
    other = compute_threshold("glm-5.2", 1_000_000, config, overrides, provider="zai")
    assert scoped.tokens == 350_000 and other.tokens == 500_000


@pytest.mark.slow
@pytest.mark.parametrize("name", ["config_full.yaml", "config_lean.yaml"])
def test_the_service_starts_on_a_real_hermes_config(name, tmp_path):
    config = tmp_path / "config.yaml"
    text = (DATA / name).read_text(encoding="utf-8")
    config.write_text(text + f"\nserver:\n  data_dir: {tmp_path}\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**os.environ, "HERMES_CONFIG": str(config)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr


def test_hermess_documented_model_thresholds_resolve_as_hermes_resolves_them():
    # Hermes's own example (developer-guide "Per-model threshold overrides").
    overrides = [
        _override("glm-5.2", 0.40),
        _override("glm-5.2-1M", 0.25),
        _override("claude-sonnet", 0.35),
        _override("openai-codex:astra", 0.85),
    ]
    assert match_override("glm-5.2-1M", overrides).ratio == 0.25  # longest substring wins
    assert match_override("glm-5.2", overrides).ratio == 0.40
    assert match_override("gpt-6-astra", overrides, "openai-codex").ratio == 0.85
    assert match_override("gpt-6-astra", overrides, "openrouter") is None  # scoped: that route only
    # Ranking uses the model substring only: "astra-900k" beats the scoped "astra"...
    picker = [*overrides, _override("astra-900k", 0.5)]
    assert match_override("gpt-6-astra-900k", picker, "openai-codex").ratio == 0.5
    # ...and a scoped key beats a bare key with the identical substring.
    same = [_override("astra", 0.6), _override("openai-codex:astra", 0.85)]
    assert match_override("gpt-6-astra", same, "openai-codex").ratio == 0.85
    assert match_override("gpt-6-astra", same, "nous").ratio == 0.6


def test_threshold_tokens_caps_the_trigger_with_hermess_numbers():
    capped = CompressionConfig(threshold_tokens=256_000)
    plain = CompressionConfig()
    # "a 1M window compacts at 256K instead of 500K"
    assert compute_threshold("glm-5.2", 1_000_000, plain).tokens == 500_000
    assert compute_threshold("glm-5.2", 1_000_000, capped).tokens == 256_000
    # The cap survives a switch to a smaller window (400K: 75% = 300K, capped to 256K)...
    assert compute_threshold("glm-5.2", 400_000, capped).tokens == 256_000
    # ...and a cap above what the window reaches changes nothing: the ratio result stands.
    huge = CompressionConfig(threshold_tokens=2_000_000)
    assert (
        compute_threshold("gpt-4o", 128_000, huge).tokens
        == compute_threshold("gpt-4o", 128_000, plain).tokens
        == 96_000
    )
