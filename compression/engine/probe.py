"""Probe a summary (``manage.py probe_summary EVENT``, the console's button): ask the summariser
N questions that only the originals can answer, let it answer from the summary alone, and check
the answers against the originals. Off unless asked; never automatic.

Each question is a line of the originals that holds one of the span's salient items, with the
item blanked ("The deploy rolled back to ____."): the answer is right when it holds the item.
Items the score found missing are asked first, then items it found kept, so the probe tests the
score too: a kept item the model cannot recall was carried in name only. The lines are masked
like everything else that leaves (compression.redaction).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from compression.engine import egress
from compression.engine import retention as scoring
from compression.engine.prompt import Prompt, strip_markers
from compression.engine.summarizer import SummaryFailed, summarize
from compression.models import CompressionEvent
from core.config import get_config
from core.redaction import Tally
from sessions_app.models import Message
from sessions_app.selectors.messages import originals_of, summary_in
from sessions_app.services import InvalidInput, StateConflict

BLANK = "____"
CONTEXT_CHARS = 220  # of the line around the blanked item
UNKNOWN = "UNKNOWN"
SYSTEM = (
    "You answer questions about a conversation from its summary alone. Fill each blank with the "
    "exact text the summary gives for it (an identifier, path, number, version, name or term), "
    f"nothing else. If the summary does not say, answer {UNKNOWN}. Never guess."
)
_ANSWER = re.compile(r"^\s*(\d+)[.):]\s*(.*)$")


def probe(event: CompressionEvent, questions: int | None = None) -> dict[str, Any]:
    """Ask, check, store the result on ``event.probe`` and return it. Raises InvalidInput
    (nothing to probe, no model) or StateConflict (the summary is gone)."""
    model = get_config().auxiliary.compression
    if not model.configured:
        raise InvalidInput(
            "No summary model is configured (auxiliary.compression model and base_url): the "
            "probe asks the summariser."
        )
    if event.outcome not in CompressionEvent.WROTE or event.summary_message_id is None:
        raise InvalidInput(
            f"Event {event.pk} wrote no summary ({event.outcome}): there is nothing to probe."
        )
    summary = summary_in(event.session_id, event.summary_message_id)
    if summary is None:
        raise StateConflict(f"The summary of event {event.pk} no longer exists.")
    wanted = questions or get_config().compression.scoring.probe_questions
    masked = Tally()
    texts = [scoring.row_text(m) for m in egress.masked_rows(list(_originals(summary)), masked)]
    asked = _questions(texts, set(event.salient_missed or ()), wanted)
    if not asked:
        raise InvalidInput(f"The span of event {event.pk} has no salient item to ask about.")
    summary_text = egress.masked_text(strip_markers(summary.content or ""), masked) or ""
    numbered = "\n".join(f"{n}. {q['question']}" for n, q in enumerate(asked, 1))
    user = (
        f"SUMMARY:\n{summary_text}\n\nQUESTIONS (fill each blank {BLANK}):\n{numbered}\n\n"
        "Answer each on its own line as `N. answer`, in order."
    )
    config = get_config().compression
    try:
        reply = summarize(
            Prompt(system=SYSTEM, user=user, target_tokens=0, truncated_chars=0),
            model,
            idle_timeout=config.context_timeout_seconds,
            total_timeout=config.context_total_ceiling_seconds,
        ).text
        error = ""
    except SummaryFailed as failed:
        reply, error = "", str(failed)
    answers = _answers(reply)
    for n, question in enumerate(asked, 1):
        answer = answers.get(n, "")
        question["answer"] = answer
        question["correct"] = bool(answer) and scoring.normalise(question["item"]) in (
            scoring.normalise(answer)
        )
    result = {
        "asked_at": datetime.now(UTC).isoformat(),
        "model": model.model,
        "asked": len(asked),
        "correct": sum(q["correct"] for q in asked),
        "error": error,
        "questions": asked,
    }
    CompressionEvent.objects.filter(pk=event.pk).update(probe=result)
    event.probe = result
    return result


def _originals(summary: Message):
    return originals_of(summary).order_by("position", "id")


def _questions(texts: list[str], missed: set[str], wanted: int) -> list[dict[str, Any]]:
    """Missed items first, then kept ones, each as a blanked line of the originals."""
    items = scoring.salient_items(texts)
    ordered = [i for i in items if i.text in missed] + [i for i in items if i.text not in missed]
    asked: list[dict[str, Any]] = []
    for item in ordered:
        line = _line_with(texts, item.text)
        if line is None:
            continue
        asked.append(
            {
                "item": item.text,
                "kind": item.kind,
                "missed_by_score": item.text in missed,
                "question": line,
            }
        )
        if len(asked) >= wanted:
            break
    return asked


def _line_with(texts: list[str], item: str) -> str | None:
    pattern = re.compile(re.escape(item), re.I)
    for text in texts:
        for line in text.splitlines():
            found = pattern.search(line)
            if found is None:
                continue
            start = max(0, found.start() - CONTEXT_CHARS // 2)
            piece = line[start : found.end() + CONTEXT_CHARS // 2]
            blanked = pattern.sub(BLANK, piece).strip()
            if len(blanked) > len(BLANK) + 8:  # a line with more than the item itself
                return blanked
    return None


def _answers(reply: str) -> dict[int, str]:
    answers: dict[int, str] = {}
    for line in reply.splitlines():
        found = _ANSWER.match(line)
        if found:
            text = found.group(2).strip().strip("`").strip()
            answers[int(found.group(1))] = "" if text.upper() == UNKNOWN else text
    return answers
