"""A Hermes Agent ``config.yaml`` read as this service's configuration.

Hermes writes about ninety sections; this service uses four of its blocks (``model``,
``auxiliary.compression``, ``compression`` and -- its own -- ``search`` and ``server``). Before the
schema sees the data, this module

* folds Hermes's legacy forms the way Hermes itself does on load (root ``provider``/``base_url``/
  ``context_length``/``api_base``, ``model.model``/``model.name``, a bare ``model: "id"``, the
  ``compression.summary_*`` keys its migration 17 moves to ``auxiliary.compression``);
* takes a key from the environment where Hermes does (``key_env``, ``${VAR}`` references);
* sets aside the keys of those blocks that Hermes has and this service does not use, so they can be
  named in one warning line. A key close to one of ours is kept, so a misspelling is still refused
  with its name.
"""

from __future__ import annotations

import difflib
import os
import re
from typing import Any

# Keys Hermes Agent writes in the blocks this service reads, that the service does not use
# (Hermes's config defaults, config version 45, and the model keys its setup writes).
UNUSED_KEYS: dict[str, frozenset[str]] = {
    "model": frozenset(
        """api_mode streaming ollama_num_ctx max_tokens default_headers extra_headers
        openai_runtime reasoning_echo auth_mode entra""".split()
    ),
    "auxiliary.compression": frozenset(
        """context_length fallback_chain max_concurrency no_progress_timeout""".split()
    ),
    "compression": frozenset(),
}
# Hermes's top-level sections and root keys (config version 45 and its legacy and extra root keys):
# set aside without a near-miss check ("x_search" is not a misspelling of "search").
HERMES_SECTIONS = frozenset(
    """_config_version agent approvals attachments auth auxiliary bedrock bot_mode browser
    checkpoints code_execution command_allowlist compression computer_use context
    context_file_max_chars context_file_read_timeout credential_pool_strategies cron curator
    custom_providers dashboard database delegation desktop discord display doctor fallback_model
    fallback_providers file_read_max_chars gateway goals honcho hooks hooks_auto_accept
    human_delay image_gen kanban known_builtin_toolsets known_plugin_toolsets local_runtime
    logging loops lsp matrix mattermost max_concurrent_sessions max_live_sessions max_turns mcp
    mcp_discovery_timeout mcp_servers mcp_single_query_discovery_timeout memory moa model
    model_aliases model_catalog model_overrides models_dev monitoring network nous onboarding
    openrouter paste_collapse_char_threshold paste_collapse_threshold
    paste_collapse_threshold_fallback personalities platform_hints platform_toolsets platforms
    plugins prefill_messages_file privacy prompt_caching providers proxy quick_commands runtime
    secrets security session sessions signal skills slack smart_model_routing streaming stt
    telegram telemetry terminal timeouts timezone tool_budget tool_gateway_declined_tools
    tool_loop_guardrails tool_output tools toolsets tts updates vault vertex video_gen vision
    voice wake_word web whatsapp worktree worktree_sync x_search""".split()
)
HERMES_AUXILIARY_KEYS = frozenset(
    """approval background_review compression curator flush_memories free_only goal_judge
    kanban_decomposer mcp memory_query_rewrite moa_aggregator moa_reference monitor
    openrouter_model profile_describer review session_search skills_hub stream_only_base_urls
    title_generation transient_retries triage_specifier tts_audio_tags tts_rewrite vision
    web_extract""".split()
)
# Hermes's own aliases, read as the key they stand for.
KEY_ENV_ALIASES = ("key_env", "api_key_env")
_ENV_REF = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")
LEGACY_SUMMARY_KEYS = {
    "summary_model": "model",
    "summary_provider": "provider",
    "summary_base_url": "base_url",
}


# Providers Hermes names whose OpenAI-compatible endpoint and key variable are well known.
PROVIDER_ENDPOINTS = {
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "openai": ("https://api.openai.com/v1", "OPENAI_API_KEY"),
}


class Adapted:
    """What reading a Hermes file changed: keys set aside (unused) and keys moved (legacy)."""

    def __init__(self) -> None:
        self.unused: list[str] = []
        self.moved: list[str] = []
        self.foreign_sections: list[str] = []
        self.notes: list[str] = []


def _expand(value: Any) -> Any:
    """``${VAR}`` and ``${env:VAR}`` from the environment, as Hermes expands them; a reference to
    a variable that is not set stays as written (Hermes keeps it verbatim too)."""
    if isinstance(value, str):
        return _ENV_REF.sub(lambda m: os.environ.get(m.group(1), m.group(0)), value)
    return value


def _fold_model(data: dict, adapted: Adapted) -> None:
    model = data.get("model")
    if isinstance(model, str):
        model = {"default": model} if model else {}
    if model is None:
        model = {}
    if not isinstance(model, dict):
        return  # the schema names the wrong type
    model = dict(model)
    for root_key, key in (
        ("provider", "provider"),
        ("base_url", "base_url"),
        ("context_length", "context_length"),
        ("api_base", "base_url"),
    ):
        if root_key in data:
            value = data.pop(root_key)
            if not model.get(key):
                model[key] = value
            adapted.moved.append(f"{root_key} -> model.{key}")
    if "api_base" in model:
        value = model.pop("api_base")
        if not model.get("base_url"):
            model["base_url"] = value
        adapted.moved.append("model.api_base -> model.base_url")
    for alias in ("model", "name"):
        if alias in model:
            value = model.pop(alias)
            if not model.get("default"):
                model["default"] = value
    default = model.get("default")
    if isinstance(default, dict):  # {provider, model} flattened, its provider wins over "auto"
        model["default"] = default.get("model", "")
        if default.get("provider") and model.get("provider") in (None, "", "auto"):
            model["provider"] = default["provider"]
    if data.get("model") is not None or model:
        data["model"] = model


def _take_key_env(block: dict, where: str, adapted: Adapted) -> None:
    for alias in KEY_ENV_ALIASES:
        if alias in block:
            name = block.pop(alias)
            if isinstance(name, str) and name and not block.get("api_key"):
                block["api_key"] = os.environ.get(name, "")
            adapted.moved.append(f"{where}.{alias} -> {where}.api_key (from ${name})")


def _fold_legacy_summary(data: dict, adapted: Adapted) -> None:
    compression = data.get("compression")
    if not isinstance(compression, dict):
        return
    legacy = {k: compression[k] for k in LEGACY_SUMMARY_KEYS if k in compression}
    if not legacy:
        return
    compression = {k: v for k, v in compression.items() if k not in LEGACY_SUMMARY_KEYS}
    data["compression"] = compression
    auxiliary = data.get("auxiliary")
    auxiliary = dict(auxiliary) if isinstance(auxiliary, dict) else {}
    block = auxiliary.get("compression")
    block = dict(block) if isinstance(block, dict) else {}
    for old, new in LEGACY_SUMMARY_KEYS.items():
        if old not in legacy:
            continue
        value = legacy[old]
        empty = block.get(new) in (None, "") or (new == "provider" and block.get(new) == "auto")
        if empty and value not in (None, "") and not (new == "provider" and value == "auto"):
            block[new] = value
        adapted.moved.append(f"compression.{old} -> auxiliary.compression.{new}")
    auxiliary["compression"] = block
    data["auxiliary"] = auxiliary


def _resolve_summariser(data: dict, adapted: Adapted) -> None:
    """Where Hermes names the summariser by provider rather than URL: ``main`` is the chat
    model's endpoint, a well-known provider its public endpoint. ``auto`` stays local here."""
    auxiliary = data.get("auxiliary")
    block = auxiliary.get("compression") if isinstance(auxiliary, dict) else None
    if not isinstance(block, dict) or block.get("base_url"):
        return
    provider = str(block.get("provider") or "auto").lower()
    model = data.get("model")
    if not isinstance(model, dict):
        model = {}
    if provider == "main" and model.get("base_url"):
        block["base_url"] = model["base_url"]
        block.setdefault("model", "")
        if not block["model"]:
            block["model"] = model.get("default", "")
        if not block.get("api_key"):
            block["api_key"] = model.get("api_key", "")
        adapted.moved.append("auxiliary.compression.provider main -> model.base_url")
    elif provider in PROVIDER_ENDPOINTS and block.get("model"):
        url, key_var = PROVIDER_ENDPOINTS[provider]
        block["base_url"] = url
        if not block.get("api_key"):
            block["api_key"] = os.environ.get(key_var, "")
        adapted.moved.append(f"auxiliary.compression.provider {provider} -> {url}")
    elif provider == "auto" and not block.get("model"):
        adapted.notes.append(
            "auxiliary.compression is 'auto': Hermes Agent summarises with the main model; here "
            "summaries are local until auxiliary.compression sets model and base_url (or "
            "provider: main)"
        )
    else:
        adapted.notes.append(
            f"auxiliary.compression.provider {provider!r} has no base URL here: summaries are "
            "local until auxiliary.compression.base_url is set"
        )


def _keep(
    block: dict, ours: list[str], known: frozenset[str], set_aside: list[str], where: str
) -> dict:
    """Our keys, and near-misses of them that are not keys Hermes has (the schema refuses those,
    naming them); every other key is set aside, its dotted name added to ``set_aside``."""
    kept = {}
    for key, value in block.items():
        near_miss = key not in known and difflib.get_close_matches(str(key), ours, 1, 0.75)
        if key in ours or near_miss:
            kept[key] = value
        else:
            set_aside.append(f"{where}{key}")
    return kept


def adapt(data: dict, ours: dict[str, list[str]]) -> tuple[dict, Adapted]:
    """The file's data as the schema reads it. ``ours`` maps a block's dotted path to the keys
    the schema has there ("" is the top level)."""
    adapted = Adapted()
    data = dict(data)
    data.pop("_config_version", None)
    _fold_model(data, adapted)
    _fold_legacy_summary(data, adapted)

    data = _keep(data, ours[""], HERMES_SECTIONS, adapted.foreign_sections, "")

    for where in ("model", "compression"):
        if isinstance(data.get(where), dict):
            block = {k: _expand(v) for k, v in data[where].items()}
            if where == "model":
                _take_key_env(block, "model", adapted)
            data[where] = _keep(block, ours[where], UNUSED_KEYS[where], adapted.unused, f"{where}.")
    auxiliary = data.get("auxiliary")
    if isinstance(auxiliary, dict):
        kept = _keep(
            auxiliary,
            ours["auxiliary"],
            HERMES_AUXILIARY_KEYS,
            adapted.foreign_sections,
            "auxiliary.",
        )
        summariser = kept.get("compression")
        if isinstance(summariser, dict):
            summariser = {k: _expand(v) for k, v in summariser.items()}
            _take_key_env(summariser, "auxiliary.compression", adapted)
            kept["compression"] = _keep(
                summariser,
                ours["auxiliary.compression"],
                UNUSED_KEYS["auxiliary.compression"],
                adapted.unused,
                "auxiliary.compression.",
            )
        data["auxiliary"] = kept
        _resolve_summariser(data, adapted)
    return data, adapted
