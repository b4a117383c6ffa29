"""SPEC T1 as one table: model, window, overrides -> threshold tokens."""

from __future__ import annotations

import pytest

from compression.policy.threshold import Override, compute_threshold, match_override
from core.config import CompressionConfig

DEFAULT = CompressionConfig()
CAPPED = CompressionConfig(threshold_tokens=100_000)
RESERVE = CompressionConfig(output_reserve_tokens=32_000)
OVERRIDES = [
    Override("claude", 0.60, None, "config"),
    Override("claude-sonnet", 0.90, None, "config"),
    Override("glm-5.2", 0.40, 90_000, "config"),
    Override("gemini", 0.30, None, "table"),
]

CASES = [
    # model, window, config, expected tokens, why
    ("gpt-4.1", 1_047_576, DEFAULT, 523_788, "ratio 0.50 of a 1M window"),
    ("gemini-2.5-pro", 1_048_576, DEFAULT, 524_288, "0.50, no override passed"),
    ("gpt-4o", 128_000, DEFAULT, 96_000, "under 512K: ratio raised to 0.75"),
    ("claude-opus-4", 200_000, DEFAULT, 150_000, "0.75 for a 200K window"),
    ("gpt-5", 400_000, DEFAULT, 300_000, "400K < 512K: 0.75"),
    ("o3", 200_000, DEFAULT, 170_000, "reasoning model: 0.85"),
    ("deepseek-reasoner", 128_000, DEFAULT, 108_800, "reasoning by pattern: 0.85"),
    ("qwen3-32b-thinking", 131_072, DEFAULT, 111_411, "'-thinking' pattern: 0.85"),
    ("gpt-5.3-codex-spark", 1_000_000, DEFAULT, 700_000, "spark: 0.70"),
    ("gpt-5.3-codex-spark", 128_000, DEFAULT, 89_600, "spark lowers to 0.70 after the raise"),
    ("llama-3.1-8b", 64_000, DEFAULT, 54_400, "floor 64K reaches the window: 85%"),
    ("tiny", 32_768, DEFAULT, 27_852, "window below the floor: 85%"),
    ("mistral-large", 80_000, DEFAULT, 64_000, "0.75 x 80K = 60K, floored at 64K"),
    ("gpt-4.1", 1_047_576, CAPPED, 100_000, "threshold_tokens caps the result"),
    ("gpt-4o", 128_000, CAPPED, 96_000, "a cap above the result changes nothing"),
    ("gpt-4.1", 1_047_576, RESERVE, 507_788, "output reserve comes off the window first"),
]


@pytest.mark.parametrize(("model", "window", "config", "expected", "why"), CASES)
def test_threshold_table(model, window, config, expected, why):
    assert compute_threshold(model, window, config).tokens == expected, why


OVERRIDE_CASES = [
    ("anthropic/claude-sonnet-4.5", 1_000_000, 900_000, "longest substring wins: claude-sonnet"),
    ("claude-haiku-4", 1_000_000, 600_000, "only 'claude' matches"),
    ("claude-haiku-4", 200_000, 120_000, "an override sets the ratio last: 0.60 under 512K"),
    ("glm-5.2-air", 1_000_000, 90_000, "override's own cap"),
    ("gemini-3-pro", 2_000_000, 600_000, "run-time table override"),
]


@pytest.mark.parametrize(("model", "window", "expected", "why"), OVERRIDE_CASES)
def test_threshold_table_with_overrides(model, window, expected, why):
    assert compute_threshold(model, window, DEFAULT, OVERRIDES).tokens == expected, why


def test_on_equal_length_the_run_time_table_beats_the_file():
    overrides = [Override("gpt", 0.6, None, "config"), Override("gpt", 0.9, None, "table")]
    assert match_override("gpt-4.1", overrides).source == "table"


def test_the_reason_explains_the_number():
    reason = compute_threshold("gpt-4o", 128_000, DEFAULT).reason
    assert "raised to 0.75" in reason


# Each rule of SPEC T1 through the public function, sessions opened with the catalog's windows.
PUBLIC_CASES = [
    # model, catalog window, expected threshold, the rule that decides it
    ("gpt-4.1", 1_047_576, 523_788, "the configured ratio 0.50"),
    ("gpt-4o", 128_000, 96_000, "under 512K: raised to 0.75"),
    ("o3", 200_000, 170_000, "reasoning: raised further to 0.85"),
    ("deepseek-reasoner", 128_000, 108_800, "reasoning by pattern: 0.85"),
    ("gpt-5.3-codex-spark", 128_000, 89_600, "spark: lowered to 0.70 (catalog window 128K)"),
    ("gpt-4", 8_192, 6_963, "the 64K floor reaches the window: 85%"),
    ("claude-haiku-4", 200_000, 120_000, "override 'claude' 0.60 sets the ratio last"),
    ("claude-sonnet-4", 200_000, 90_000, "longest substring 'claude-sonnet-4', its own cap"),
    ("gemini-2.5-pro", 1_048_576, 300_000, "an override's absolute cap alone"),
]


@pytest.mark.parametrize(("model", "window", "expected", "rule"), PUBLIC_CASES)
def test_each_threshold_rule_through_threshold_for_with_catalog_windows(
    db, hermes_config, model, window, expected, rule
):
    from compression.policy.threshold import threshold_for
    from sessions_app import services
    from sessions_app.keys import create_channel

    hermes_config(
        compression={
            "model_thresholds": {
                "gemini": {"threshold_tokens": 300_000},
                "claude": 0.60,
                "claude-sonnet-4": {"ratio": 0.9, "threshold_tokens": 90_000},
            },
        }
    )
    channel = create_channel("thresholds")[0]
    session = services.open_session(channel, model=model).session
    assert session.context_window == window
    assert threshold_for(session).tokens == expected, rule
