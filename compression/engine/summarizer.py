"""The summary model call (SPEC L2): the ``openai`` SDK against any OpenAI-compatible base URL.

No ``max_tokens`` or other output cap is sent: reasoning models spend a capped budget thinking and
return empty or cut summaries, which caused compression loops elsewhere; the prompt states the
target length instead. The reply is streamed so that both timeouts hold: ``idle`` (no byte for
that long) through the HTTP read timeout, ``total`` by a deadline checked as chunks arrive.
Reasoning (``<think>…</think>``, ``reasoning_content``) is never stored; an empty or
reasoning-only answer is a failure, and so is one the provider cut off at its own limit
(``finish_reason: length``, a Responses API ``incomplete``). ``api_mode`` picks chat completions
(the default) or the Responses API (``codex_responses``), Hermes Agent's names.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import openai

from compression.engine.prompt import Prompt
from core.config import SummaryModelConfig

THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.S | re.I)
UNCLOSED_THINK = re.compile(r"^\s*<(think|thinking|reasoning)>.*", re.S | re.I)


class SummaryFailed(Exception):
    """The model did not produce a usable summary; ``kind`` says why, for the event trail."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


@dataclass(frozen=True)
class Summary:
    text: str
    model: str


def strip_reasoning(text: str) -> str:
    text = THINK.sub("", text)
    text = UNCLOSED_THINK.sub("", text)  # a reply cut off inside its reasoning
    return text.strip()


def summarize(
    prompt: Prompt,
    model: SummaryModelConfig,
    *,
    idle_timeout: float,
    total_timeout: float,
) -> Summary:
    # ``auxiliary.compression.timeout`` is the summariser's own limit on one call: it bounds
    # both the wait for a byte and the whole reply, whatever the caller allows.
    idle_timeout = min(idle_timeout, model.timeout) if idle_timeout else model.timeout
    total_timeout = min(total_timeout, model.timeout) if total_timeout else model.timeout
    timeout = openai.Timeout(
        connect=min(10.0, idle_timeout), read=idle_timeout, write=30.0, pool=10.0
    )
    client = openai.OpenAI(
        base_url=model.base_url,
        api_key=model.api_key or "not-needed",
        timeout=timeout,
        max_retries=0,  # the engine decides about retries and fallbacks
    )
    deadline = time.monotonic() + total_timeout
    extra = dict(model.extra_body)
    parts: list[str] = []
    read = _read_responses if model.api_mode == "codex_responses" else _read_chat
    try:
        chunks, stop = read(client, prompt, model, extra, parts, deadline, total_timeout)
    except SummaryFailed:
        raise
    except openai.APITimeoutError:
        raise SummaryFailed("timeout", f"no data for {idle_timeout:g} s") from None
    except openai.RateLimitError as exc:
        raise SummaryFailed("rate_limited", _message(exc)) from None
    except openai.APIStatusError as exc:
        raise SummaryFailed(f"http_{exc.status_code}", _message(exc)) from None
    except openai.APIConnectionError as exc:
        raise SummaryFailed("connection", str(exc.__cause__ or exc)) from None
    except (openai.APIError, ValueError) as exc:
        raise SummaryFailed("bad_response", str(exc)[:300]) from None
    finally:
        client.close()
    if stop in CUT_OFF:
        # The provider stopped the reply at its own limit (reasoning models reach it thinking):
        # a cut summary kept as good is the loop L2 warns of -- compress, too little, again.
        raise SummaryFailed(
            "truncated",
            f"the reply was cut off ({stop}) after {len(''.join(parts)):,} characters; a "
            "partial summary is not kept",
        )
    if not chunks:
        # A 200 whose body is not a chat-completions stream (an HTML error page, a JSON
        # object): the SDK yields nothing from it. Not an empty summary -- a wrong answer.
        raise SummaryFailed("bad_response", "the reply was not a chat-completions stream")
    text = strip_reasoning("".join(parts))
    if not text:
        raise SummaryFailed("empty", "the model returned no summary text (or only reasoning)")
    return Summary(text=text, model=model.model)


# How a provider says it stopped a reply at its output limit, or withheld it: chat completions'
# finish_reason, the Responses API's incomplete_details.reason.
CUT_OFF = frozenset({"length", "content_filter", "max_output_tokens", "incomplete"})


def _in_time(deadline: float, total_timeout: float) -> None:
    if time.monotonic() > deadline:
        raise SummaryFailed("timeout", f"no complete reply within {total_timeout:g} s")


def _read_chat(
    client: openai.OpenAI,
    prompt: Prompt,
    model: SummaryModelConfig,
    extra: dict[str, Any],
    parts: list[str],
    deadline: float,
    total_timeout: float,
) -> tuple[int, str]:
    """Stream a chat completion into ``parts``: (chunks read, the finish_reason)."""
    if model.reasoning_effort:
        extra["reasoning_effort"] = model.reasoning_effort
    chunks, stop = 0, ""
    stream = client.chat.completions.create(
        model=model.model,
        messages=[
            {"role": "system", "content": prompt.system},
            {"role": "user", "content": prompt.user},
        ],
        stream=True,
        extra_body=extra or None,
    )
    with stream:
        for chunk in stream:
            chunks += 1
            _in_time(deadline, total_timeout)
            for choice in chunk.choices or ():
                if choice.delta and choice.delta.content:
                    parts.append(choice.delta.content)
                if choice.finish_reason:
                    stop = choice.finish_reason
    return chunks, stop


def _read_responses(
    client: openai.OpenAI,
    prompt: Prompt,
    model: SummaryModelConfig,
    extra: dict[str, Any],
    parts: list[str],
    deadline: float,
    total_timeout: float,
) -> tuple[int, str]:
    """The same over the Responses API (``api_mode: codex_responses``): (events read, why the
    response was incomplete, if it was)."""
    options: dict[str, Any] = {}
    if model.reasoning_effort:
        options["reasoning"] = {"effort": model.reasoning_effort}
    events, stop = 0, ""
    stream = client.responses.create(
        model=model.model,
        instructions=prompt.system,
        input=prompt.user,
        stream=True,
        store=False,
        extra_body=extra or None,
        **options,
    )
    with stream:
        for event in stream:
            events += 1
            _in_time(deadline, total_timeout)
            if event.type == "response.output_text.delta":
                parts.append(event.delta)
            elif event.type in ("response.incomplete", "response.completed"):
                details = event.response.incomplete_details
                if event.response.status == "incomplete":
                    stop = (details.reason if details else None) or "incomplete"
            elif event.type in ("response.failed", "error"):
                error = getattr(getattr(event, "response", None), "error", None) or event
                raise SummaryFailed("bad_response", str(getattr(error, "message", error))[:300])
    return events, stop


# A reply that opens like this and stays short is the model declining, not a summary.
REFUSAL = re.compile(
    r"^\W*(?:i'?m sorry|i am sorry|sorry\b|i apologi[sz]e|i can(?:'?t|not)\b|i'?m (?:not )?"
    r"(?:unable|able)\b|i am unable|i won'?t|as an ai\b|unfortunately,? i\b"
    r"|抱歉|对不起|很抱歉|我无法|我不能|申し訳)",
    re.I,
)
REFUSAL_MAX_CHARS = 1_000  # a longer reply is a summary that happens to open apologetically
MIN_SHARE = 0.01  # a summary under 1% of the tokens it replaces is absurdly short...
BUDGET_SHARE = 0.05  # ...unless it is at least 5% of its budget (the model saw at most ~40K
# tokens of a huge span, and the prompt says shorter is fine: a 2,000-token summary of 500K
# tokens is a summary)


def floor_tokens(replaced_tokens: int, budget: int | None) -> int:
    """The fewest tokens a summary of ``replaced_tokens`` may have."""
    floor = int(replaced_tokens * MIN_SHARE)
    if budget:
        floor = min(floor, int(budget * BUDGET_SHARE))
    return floor


def vet(
    text: str, replaced_tokens: int, count: Callable[[str], int], budget: int | None = None
) -> None:
    """Raise SummaryFailed for a reply that must not become the summary: a refusal, or one
    absurdly short for what it replaces (``floor_tokens``). Either is treated as a failed call
    -- fallback, failure counters and cooldown -- never as a good summary."""
    if len(text) < REFUSAL_MAX_CHARS and REFUSAL.match(text):
        raise SummaryFailed("refusal", f"the model declined instead of summarising: {text[:120]!r}")
    tokens = count(text)
    floor = floor_tokens(replaced_tokens, budget)
    if tokens < floor:
        raise SummaryFailed(
            "too_short",
            f"a {tokens:,}-token reply cannot summarise {replaced_tokens:,} tokens (the floor is "
            f"{floor:,}: {MIN_SHARE:.0%} of them, at most {BUDGET_SHARE:.0%} of the budget)",
        )


def _message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
    return str(exc)[:300]
