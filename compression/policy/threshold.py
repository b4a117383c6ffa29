"""The token threshold at which a session compresses (SPEC T1). One pure function plus the lookup
of per-model overrides (config file and the run-time table, longest matching substring wins)."""

from __future__ import annotations

from dataclasses import dataclass

from core.config import CompressionConfig, ModelThreshold

SPARK_MODEL = "gpt-5.3-codex-spark"
SPARK_RATIO = 0.70


@dataclass(frozen=True)
class Override:
    pattern: str
    ratio: float | None
    threshold_tokens: int | None
    source: str  # "config" or "table"


@dataclass(frozen=True)
class Threshold:
    tokens: int
    ratio: float
    reason: str


def _bare(model: str) -> str:
    return model.strip().lower()


def match_override(model: str, overrides: list[Override], provider: str = "") -> Override | None:
    """The override whose pattern is the longest substring of the model name (case-insensitive).

    A pattern ``"provider:substring"`` (Hermes Agent's provider-scoped key, e.g.
    ``"openrouter:glm-5.2"``) applies only when the chat model's provider is that provider, and
    beats a plain pattern of the same length; the whole pattern still matches as a literal
    substring (``"qwen3:32b"``). On equal terms the run-time table wins over the file: operators
    edit it to react now."""
    name = _bare(model)
    provider = provider.strip().lower()
    ranked = []
    for o in overrides:
        pattern = o.pattern.lower()
        scope, _, sub = pattern.partition(":")
        if sub and provider and scope == provider and sub in name:
            ranked.append(((len(sub), True, o.source == "table"), o))
        elif pattern in name:
            ranked.append(((len(pattern), False, o.source == "table"), o))
    if not ranked:
        return None
    return max(ranked, key=lambda pair: pair[0])[1]


def config_overrides(config: CompressionConfig) -> list[Override]:
    out = []
    for pattern, value in config.model_thresholds.items():
        if isinstance(value, ModelThreshold):
            out.append(Override(pattern, value.ratio, value.threshold_tokens, "config"))
        else:
            out.append(Override(pattern, float(value), None, "config"))
    return out


def table_overrides() -> list[Override]:
    from compression.models import ModelThresholdOverride

    return [
        Override(o.pattern, o.ratio, o.threshold_tokens, "table")
        for o in ModelThresholdOverride.objects.filter(enabled=True)
    ]


def is_reasoning_model(model: str, config: CompressionConfig) -> bool:
    name = _bare(model).rsplit("/", 1)[-1]
    return any(
        name.startswith(p.lower()) or (p.startswith("-") and p.lower() in name)
        for p in config.reasoning_model_patterns
    )


def compute_threshold(
    model: str,
    context_window: int,
    config: CompressionConfig,
    overrides: list[Override] | None = None,
    *,
    hold_for_server: bool = True,
    provider: str = "",
) -> Threshold:
    """threshold = (window - output reserve) x ratio, floored at 64K, 85% of the window where the
    floor reaches it, capped by ``threshold_tokens``.

    The ratio, in the seed's order, each rule over the one before: the configured ratio (0.50);
    a window under 512K raises it to at least 0.75; a reasoning model raises it further, to at
    least 0.85; ``gpt-5.3-codex-spark`` lowers it to 0.70 (its small window is why it exists);
    last, a per-model override (longest substring wins) sets it outright.
    """
    override = match_override(model, overrides or [], provider)
    ratio = config.threshold
    reasons = [f"ratio {ratio:.2f}"]
    if context_window < config.small_window_limit_tokens and ratio < config.small_window_threshold:
        ratio = config.small_window_threshold
        reasons.append(
            f"raised to {ratio:.2f} for a window under {config.small_window_limit_tokens:,}"
        )
    if is_reasoning_model(model, config) and ratio < config.reasoning_threshold:
        ratio = config.reasoning_threshold
        reasons.append(f"raised to {ratio:.2f} for a reasoning model")
    if SPARK_MODEL in _bare(model):
        ratio = SPARK_RATIO
        reasons.append(f"{SPARK_MODEL}: {ratio:.2f}")
    if override is not None and override.ratio is not None:
        ratio = override.ratio
        reasons.append(f"override '{override.pattern}' ({override.source}): {ratio:.2f}")
    usable = max(1, context_window - config.output_reserve_tokens)
    tokens = int(usable * ratio)
    if tokens < config.threshold_floor_tokens:
        tokens = config.threshold_floor_tokens
        reasons.append(f"floored at {tokens:,}")
    if tokens >= usable:
        tokens = int(context_window * config.floor_reaches_window_ratio)
        share = config.floor_reaches_window_ratio
        reasons.append(f"floor reaches the window: {share:.0%} of {context_window:,}")
    caps = [c for c in (config.threshold_tokens, override and override.threshold_tokens) if c]
    if caps and min(caps) < tokens:
        tokens = min(caps)
        reasons.append(f"capped at {tokens:,}")
    if hold_for_server and server_compaction_applies(model, config):
        # T7b: the server compacts first; ours stays above it as the safety net.
        server = config.codex_responses_compact_threshold or tokens
        held = min(server + max(1_000, context_window // 20), int(context_window * 0.95))
        if held > tokens:
            tokens = held
            reasons.append(
                f"held above the OpenAI server's compact threshold {server:,} (the server "
                "compacts first; this is the safety net)"
            )
    return Threshold(tokens=tokens, ratio=ratio, reason="; ".join(reasons))


def server_compaction_applies(model: str, config: CompressionConfig) -> bool:
    """OpenAI server-side compaction (T7b) is on for this model's family."""
    name = _bare(model)
    return config.codex_responses_native and any(
        pattern.lower() in name for pattern in config.codex_responses_models
    )


def server_compact_threshold(session) -> int:
    """The ``compact_threshold`` sent to the server: configured, else our own unheld threshold."""
    from core.config import get_config

    whole = get_config()
    config = whole.compression
    if config.codex_responses_compact_threshold:
        return config.codex_responses_compact_threshold
    overrides = config_overrides(config) + table_overrides()
    return compute_threshold(
        session.model,
        session.context_window,
        config,
        overrides,
        hold_for_server=False,
        provider=whole.model.provider,
    ).tokens


def threshold_for(session, overrides: list[Override] | None = None) -> Threshold:
    """``overrides``: the configured and table overrides, when the caller read them already
    (for many sessions at once); else read here."""
    from core.config import get_config

    whole = get_config()
    config = whole.compression
    if overrides is None:
        overrides = config_overrides(config) + table_overrides()
    return compute_threshold(
        session.model, session.context_window, config, overrides, provider=whole.model.provider
    )
