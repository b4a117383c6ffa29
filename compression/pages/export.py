"""The timeline's download link: one session as JSON Lines, streamed."""

from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, StreamingHttpResponse
from django.shortcuts import get_object_or_404

from sessions_app.selectors.sessions import with_channel
from sessions_app.services.export import export_lines


@staff_member_required
def export_session(request: HttpRequest, session_id) -> StreamingHttpResponse:
    session = get_object_or_404(with_channel(), pk=session_id)
    response = StreamingHttpResponse(
        export_lines([session]), content_type="application/x-ndjson; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="session-{session.pk}.jsonl"'
    return response
