"""The operators' session timeline: head, summaries (expandable to the originals they replaced),
tail, rolled-back rows, the live tokens against the threshold, the compression events, and the
compress / reset buttons. Staff only; every action is a POST with CSRF."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

from django import forms
from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.decorators import permission_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from compression.models import CompressionEvent
from compression.pages.charts import HEIGHT, PAD, WIDTH, hourly_compressions, token_chart
from compression.policy.threshold import threshold_for
from compression.policy.triggers import enqueue_manual
from sessions_app.models import Message, Session
from sessions_app.services import reset_session
from sessions_app.services.errors import NotFound

MAIN_FLOW_LIMIT = 500


def _order(row: Message) -> tuple[int, int, int]:
    return (row.position, 0 if row.is_summary else 1, row.pk)


@staff_member_required
def timeline(request: HttpRequest, session_id) -> HttpResponse:
    session = get_object_or_404(Session.objects.select_related("channel"), pk=session_id)
    rows = list(Message.objects.filter(session=session).defer("content_parts", "extra"))
    replaced: dict[int, list[Message]] = defaultdict(list)
    main: list[Message] = []
    for row in sorted(rows, key=_order):
        if row.summarized_by_id:
            replaced[row.summarized_by_id].append(row)
        else:
            main.append(row)
    for row in rows:
        row.replaced_rows = replaced.get(row.pk, [])
        row.summary_of = None
    by_id = {row.pk: row for row in rows}
    for row in rows:
        if row.summarized_by_id:
            row.summary_of = by_id.get(row.summarized_by_id)
    hidden = max(0, len(main) - MAIN_FLOW_LIMIT)
    threshold = threshold_for(session)
    chart = token_chart(session, threshold.tokens)
    return render(
        request,
        "console/timeline.html",
        {
            "session": session,
            "rows": main[hidden:],
            "hidden": hidden,
            "threshold": threshold,
            "percent": min(100, round(100 * session.live_tokens / max(1, threshold.tokens))),
            # What happened first (compressions, failures, resets), then what the triggers
            # decided on appends (repeats collapsed), each list bounded.
            "events": CompressionEvent.objects.filter(session=session).exclude(
                outcome__in=CompressionEvent.DECISIONS
            )[:50],
            "decisions": CompressionEvent.objects.filter(
                session=session, outcome__in=CompressionEvent.DECISIONS
            )[:50],
            "chart": chart,
        },
    )


@staff_member_required
def dashboard(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    bars, top = hourly_compressions()
    since = now - timedelta(hours=24)
    by_trigger = (
        CompressionEvent.objects.filter(created_at__gte=since)
        .values("trigger", "outcome")
        .annotate(n=Count("id"))
        .order_by("trigger", "outcome")
    )
    labels = dict(CompressionEvent.Trigger.choices)
    cooling = Session.objects.filter(cooldown_until__gt=now)
    locked = Session.objects.filter(thrash_lock_until__gt=now)
    return render(
        request,
        "console/dashboard.html",
        {
            "bars": bars,
            "top": top,
            "by_trigger": [
                {**row, "label": labels.get(row["trigger"], row["trigger"])} for row in by_trigger
            ],
            "cooling": cooling.order_by("cooldown_until")[:50],
            "cooling_count": cooling.count(),
            "locked": locked.order_by("thrash_lock_until")[:50],
            "locked_count": locked.count(),
            "largest": Session.objects.select_related("channel").order_by("-live_tokens")[:10],
            "width": WIDTH,
            "height": HEIGHT,
            "pad": PAD,
        },
    )


# Looking needs a staff login; acting on a session needs the right to change sessions too.
CHANGE_SESSION = "sessions_app.change_session"


@staff_member_required
@permission_required(CHANGE_SESSION, raise_exception=True)
@require_POST
def compress(request: HttpRequest, session_id) -> HttpResponse:
    session = get_object_or_404(Session, pk=session_id)
    form = CompressForm(request.POST)
    if form.is_valid():
        try:
            enqueue_manual(
                session,
                CompressionEvent.Trigger.MANUAL_ADMIN,
                form.cleaned_data["focus"] or None,
                form.cleaned_data["around"],
            )
        except NotFound as exc:
            form.add_error("around", exc.message)
    if not form.is_valid():
        problems = "; ".join(e for errors in form.errors.values() for e in errors)
        messages.error(request, f"Nothing was queued: {problems}")
        return redirect("console:timeline", session_id=session.pk)
    messages.success(request, "Compression queued; its event appears below when it is done.")
    return redirect("console:timeline", session_id=session.pk)


class CompressForm(forms.Form):
    focus = forms.CharField(max_length=500, required=False, strip=True)
    around = forms.CharField(max_length=12, required=False, strip=True)

    def clean_around(self) -> int | None:
        text = self.cleaned_data["around"].removeprefix("#")
        if not text:
            return None
        if not (text.isascii() and text.isdigit()) or int(text) >= 2**31:
            raise forms.ValidationError(
                f"“around” must be a message number such as 42, not {text!r}."
            )
        return int(text)


@staff_member_required
@permission_required(CHANGE_SESSION, raise_exception=True)
@require_http_methods(["GET", "POST"])
def reset(request: HttpRequest, session_id) -> HttpResponse:
    session = get_object_or_404(Session, pk=session_id)
    if request.method == "POST":
        archived = reset_session(session)
        messages.success(request, f"Session reset: {archived} message(s) archived (searchable).")
        return redirect("console:timeline", session_id=session.pk)
    return render(request, "console/confirm_reset.html", {"session": session})
