"""The operators' session timeline: head, summaries (expandable to the originals they replaced),
tail, rolled-back rows, the live tokens against the threshold, the compression events, and the
compress / reset buttons. Staff only; every action is a POST with CSRF."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.decorators import permission_required
from django.db.models import Count, Sum
from django.db.models.functions import Coalesce
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from compression.models import CompressionEvent
from compression.pages import stats
from compression.pages.charts import (
    GROUPS,
    HEIGHT,
    OUTCOMES,
    PAD,
    WIDTH,
    hourly_compressions,
    hourly_counts,
    token_chart,
)
from compression.pages.window import BadPage, number, window
from compression.pages.window import Request as PageRequest
from compression.policy.threshold import threshold_for
from compression.policy.triggers import enqueue_again, enqueue_manual, enqueue_probe
from core.config import get_config
from sessions_app import audit
from sessions_app.audit import admin_actor
from sessions_app.models import AuditEntry, Session
from sessions_app.selectors.messages import (
    covering,
    not_under_a_summary,
    originals_of,
    place_of,
    summary_in,
    summary_numbers,
)
from sessions_app.selectors.sessions import guarded, with_channel
from sessions_app.services import reset_session
from sessions_app.services.errors import NotFound, ServiceError
from sessions_app.services.pins import set_pinned


def _event_id(text: str | None) -> int | None:
    """An event id from the page's own follow/landed links; anything else is nothing."""
    return number(text, 2**63)


def _page_request(request: HttpRequest) -> PageRequest | HttpResponse:
    try:
        return PageRequest.parse(request.GET)
    except BadPage as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")


@staff_member_required
def timeline(request: HttpRequest, session_id) -> HttpResponse:
    """A page of the rows not under a summary (head, summaries, live rows, rolled-back rows),
    in position order; a summary links to its originals' own pages. ``?around=N`` opens the
    page at message #N; at a position only an archived original holds, it opens that original's
    summary's page of originals."""
    session = get_object_or_404(with_channel(), pk=session_id)
    want = _page_request(request)
    if isinstance(want, HttpResponse):
        return want
    main = not_under_a_summary(session)
    if want.around is not None and not main.filter(position=want.around).exists():
        under = covering(session, want.around)
        if under is not None:  # archived, and its summary (which took its position) is not here
            # either: it is on its summary's page of originals
            url = reverse("console:originals", args=[session.pk, under[0]])
            return redirect(f"{url}?around={want.around}#m-{under[1]}")
    page = window(main.defer("content_parts", "extra"), want)
    _number_summaries(session, page.rows)
    threshold = threshold_for(session)
    return render(
        request,
        "console/timeline.html",
        {
            "session": session,
            "guards": session.guards(),
            "follow": _event_id(request.GET.get("follow")),
            "landed": CompressionEvent.objects.filter(
                session=session,
                pk=_event_id(request.GET.get("landed")),  # type: ignore[misc]  # None: no row
            ).first(),
            "page": page,
            "rows": page.rows,
            "threshold": threshold,
            "percent": round(100 * session.live_tokens / max(1, threshold.tokens)),
            # What happened first (compressions, failures, resets), then what the triggers
            # decided on appends (repeats collapsed), each list bounded.
            "events": CompressionEvent.objects.filter(session=session)
            .exclude(outcome__in=CompressionEvent.DECISIONS)
            .annotate(hooks=Count("hook_deliveries"))[:50],
            # With checkpoint_required, "Compress now" offers to go on without the checkpoint.
            "checkpoint": checkpoint_required(),
            "decisions": CompressionEvent.objects.filter(
                session=session, outcome__in=CompressionEvent.DECISIONS
            )[:50],
            "chart": token_chart(session, threshold.tokens),
        },
    )


FOLLOWED = ("compressed", "fallback", "failed", "ineffective", "pruned", "reset")


@staff_member_required
def events(request: HttpRequest, session_id) -> JsonResponse:
    """The session's events newer than ``?after=<event id>`` that end a compression (the
    timeline's script polls this after *Compress now*); decisions are left out."""
    session = get_object_or_404(with_channel(), pk=session_id)
    after = _event_id(request.GET.get("after", "0"))
    if after is None:
        return JsonResponse({"detail": "“after” must be an event id such as 42."}, status=400)
    found = CompressionEvent.objects.filter(
        session=session, id__gt=after, outcome__in=FOLLOWED
    ).order_by("id")[:20]
    return JsonResponse(
        {
            "events": [
                {
                    "id": e.id,
                    "trigger": e.get_trigger_display(),
                    "outcome": e.outcome,
                    "reason": e.reason,
                    "fell_back_because": e.fell_back_because,
                    "created_at": e.created_at.isoformat(),
                }
                for e in found
            ]
        }
    )


@staff_member_required
def message(request: HttpRequest, message_id: int) -> HttpResponse:
    """Where one message is shown: the timeline's page around it, or, for an archived original,
    its summary's page of originals; scrolled to it (search hits link here)."""
    row = place_of(message_id)
    if row is None:
        raise Http404("No such message.")
    if row.summarized_by_id:
        url = reverse("console:originals", args=[row.session_id, row.summarized_by_id])
    else:
        url = reverse("console:timeline", args=[row.session_id])
    return redirect(f"{url}?around={row.position}#m-{row.pk}")


@staff_member_required
def originals(request: HttpRequest, session_id, summary_id: int) -> HttpResponse:
    """A page of the originals one summary replaced, in position order."""
    summary = summary_in(session_id, summary_id)
    if summary is None:
        raise Http404("No such summary in this session.")
    want = _page_request(request)
    if isinstance(want, HttpResponse):
        return want
    page = window(
        originals_of(summary).defer("content_parts", "extra"),
        want if want != PageRequest() else PageRequest(head=True),
    )
    written = CompressionEvent.objects.filter(summary_message=summary).order_by("-id").first()
    return render(
        request,
        "console/originals.html",
        {
            "session": summary.session,
            "summary": summary,
            "number": summary_numbers(summary.session).get(summary.pk),
            "page": page,
            "rows": page.rows,
            "written": written,
            "model": get_config().auxiliary.compression,
            "can_act": request.user.has_perm(CHANGE_SESSION),
        },
    )


def _number_summaries(session: Session, rows: list) -> None:
    """Give each summary on the page its number ("summary 5"), read once for the page."""
    if any(row.is_summary for row in rows):
        numbers = summary_numbers(session)
        for row in rows:
            if row.is_summary:
                row.number = numbers.get(row.pk)


TRIGGER_LABELS = {
    "threshold": "token threshold or preflight",
    "hygiene": "gateway hygiene",
    "idle": "idle",
    "manual": "manual (API, console, CLI, /compress, ACP)",
    "other": "other (model error, plugin, exhaustion, server paths)",
}


def _hourly(by: str, legend: list[tuple[str, str]], rows: list[dict]) -> dict:
    bars, top, ticks = hourly_compressions(by=by, rows=rows)
    return {"by": by, "bars": bars, "top": top, "ticks": ticks, "legend": legend}


@staff_member_required
def dashboard(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    counts = hourly_counts()
    charts = [
        _hourly(
            "outcome",
            [(k, k if k != "fallback" else "fallback (local summary)") for k in OUTCOMES],
            counts,
        ),
        _hourly("trigger", [(g, TRIGGER_LABELS[g]) for g in GROUPS], counts),
    ]
    since = now - timedelta(hours=24)
    by_trigger = (  # a repeated decision is one row that happened ``repeats`` times
        CompressionEvent.objects.filter(last_at__gte=since)
        .values("trigger", "outcome")
        .annotate(n=Sum(Coalesce("repeats", 1)))
        .order_by("trigger", "outcome")
    )
    labels = dict(CompressionEvent.Trigger.choices)
    cooling, locked = guarded(now)
    return render(
        request,
        "console/dashboard.html",
        {
            "charts": charts if any(c["bars"] for c in charts) else [],
            "day": stats.last_day(since),
            "scores": stats.scores(since),
            "channels": stats.per_channel(since),
            "by_trigger": [
                {**row, "label": labels.get(row["trigger"], row["trigger"])} for row in by_trigger
            ],
            "cooling": cooling.order_by("cooldown_until")[:50],
            "cooling_count": cooling.count(),
            "locked": locked.order_by("thrash_lock_until")[:50],
            "locked_count": locked.count(),
            "largest": stats.nearest_threshold(),
            "width": WIDTH,
            "height": HEIGHT,
            "pad": PAD,
        },
    )


def checkpoint_required() -> bool:
    config = get_config().compression
    return config.checkpoint_required and bool(config.hooks.pre_compact)


# Looking needs a staff login; acting on a session needs the right to change sessions too.
CHANGE_SESSION = "sessions_app.change_session"


@staff_member_required
@permission_required(CHANGE_SESSION, raise_exception=True)
@require_POST
def compress(request: HttpRequest, session_id) -> HttpResponse:
    session = get_object_or_404(with_channel(), pk=session_id)
    form = CompressForm(request.POST)
    last_event = (
        CompressionEvent.objects.filter(session=session)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
        or 0
    )
    if form.is_valid():
        try:
            task_id = enqueue_manual(
                session,
                CompressionEvent.Trigger.MANUAL_ADMIN,
                form.cleaned_data["focus"] or None,
                form.cleaned_data["around"],
                form.cleaned_data["confirm"],
            )
            audit.record(
                admin_actor(request),
                AuditEntry.Action.COMPRESS,
                f"session {session.pk}",
                {
                    "via": "console",
                    "session": str(session.pk),
                    "channel": session.channel.name,
                    "around": form.cleaned_data["around"],
                    "focus_given": bool(form.cleaned_data["focus"]),
                    "confirm": form.cleaned_data["confirm"],
                    "task": task_id,
                },
            )
        except NotFound as exc:
            form.add_error("around", exc.message)
    if not form.is_valid():
        problems = "; ".join(str(e) for errors in form.errors.values() for e in errors)
        messages.error(request, f"Nothing was queued: {problems}")
        return redirect("console:timeline", session_id=session.pk)
    messages.success(request, "Compression queued; its event appears below when it is done.")
    # The page follows it: its script asks for events newer than the last one before it.
    url = reverse("console:timeline", args=[session.pk])
    return redirect(f"{url}?follow={last_event}")


class AgainForm(forms.Form):
    model = forms.CharField(max_length=200, required=False, strip=True)


@staff_member_required
@permission_required(CHANGE_SESSION, raise_exception=True)
@require_POST
def resummarise(request: HttpRequest, session_id, summary_id: int) -> HttpResponse:
    """Queue "summarise again from the originals" with the model named (compression.engine.redo)."""
    summary = summary_in(session_id, summary_id)
    if summary is None:
        raise Http404("No such summary in this session.")
    form = AgainForm(request.POST)
    here = reverse("console:originals", args=[summary.session_id, summary.pk])
    if not form.is_valid():
        messages.error(request, "Nothing was queued: a model name is at most 200 characters.")
        return redirect(f"{here}#provenance")
    if not summary.active:
        messages.error(request, "Nothing was queued: that summary was absorbed by a later one.")
        return redirect(f"{here}#provenance")
    if not get_config().auxiliary.compression.configured:
        messages.error(request, "Nothing was queued: no summary model is configured.")
        return redirect(f"{here}#provenance")
    model_name = form.cleaned_data["model"]
    task_id = enqueue_again(summary, model_name)
    audit.record(
        admin_actor(request),
        AuditEntry.Action.COMPRESS,
        f"session {summary.session_id}",
        {
            "via": "console",
            "again": summary.pk,
            "session": str(summary.session_id),
            "model": model_name or get_config().auxiliary.compression.model,
            "task": task_id,
        },
    )
    messages.success(
        request,
        "Queued: the summary is written again from its originals"
        + (f" by {model_name}" if model_name else "")
        + "; its event appears below when it is done.",
    )
    last_event = (
        CompressionEvent.objects.filter(session_id=summary.session_id)
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
        or 0
    )
    url = reverse("console:timeline", args=[summary.session_id])
    return redirect(f"{url}?follow={last_event}")


@staff_member_required
@permission_required(CHANGE_SESSION, raise_exception=True)
@require_POST
def probe(request: HttpRequest, session_id, event_id: int) -> HttpResponse:
    """Queue a probe of the summary an event wrote (compression.engine.probe)."""
    event = get_object_or_404(CompressionEvent, pk=event_id, session_id=session_id)
    if event.summary_message_id is None:
        raise Http404("That event wrote no summary.")
    here = reverse("console:originals", args=[session_id, event.summary_message_id])
    if not get_config().auxiliary.compression.configured:
        messages.error(request, "Nothing was queued: no summary model is configured.")
        return redirect(f"{here}#provenance")
    enqueue_probe(event)
    messages.success(request, "Probe queued: reload this page in a moment for its answers.")
    return redirect(f"{here}#provenance")


class CompressForm(forms.Form):
    focus = forms.CharField(max_length=500, required=False, strip=True)
    around = forms.CharField(max_length=12, required=False, strip=True)
    confirm = forms.BooleanField(required=False)

    def clean_around(self) -> int | None:
        text = self.cleaned_data["around"].removeprefix("#")
        if not text:
            return None
        if number(text) is None:
            raise forms.ValidationError(
                f"“around” must be a message number such as 42, not {text!r}."
            )
        return int(text)


@staff_member_required
@permission_required(CHANGE_SESSION, raise_exception=True)
@require_http_methods(["GET", "POST"])
def reset(request: HttpRequest, session_id) -> HttpResponse:
    session = get_object_or_404(with_channel(), pk=session_id)
    if request.method == "POST":
        archived = reset_session(
            session,
            source=CompressionEvent.Trigger.MANUAL_ADMIN,
            note=f"reset from the console by {request.user.get_username()}",
        )
        audit.record(
            admin_actor(request),
            AuditEntry.Action.RESET,
            f"session {session.pk}",
            {
                "via": "console",
                "session": str(session.pk),
                "channel": session.channel.name,
                "rows_archived": archived,
            },
        )
        messages.success(request, f"Session reset: {archived} message(s) archived (searchable).")
        return redirect("console:timeline", session_id=session.pk)
    return render(request, "console/confirm_reset.html", {"session": session})


@staff_member_required
@permission_required(CHANGE_SESSION, raise_exception=True)
@require_POST
def pin(request: HttpRequest, session_id, position: int) -> HttpResponse:
    """Pin or unpin a live message; the page comes back at that message."""
    session = get_object_or_404(with_channel(), pk=session_id)
    wanted = request.POST.get("pinned") == "1"
    try:
        set_pinned(session, position, wanted)
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            f"#{position} pinned: no compression will summarise it."
            if wanted
            else f"#{position} unpinned: the next compression may summarise it (kept, searchable).",
        )
    url = reverse("console:timeline", args=[session.pk])
    return redirect(f"{url}?around={position}")
