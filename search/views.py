"""The operators' search page (staff only). Same service as the API, across every channel."""

from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from search.forms import SearchForm
from search.service import Filters, InvalidQuery, search

PAGE_SIZE = 20


@staff_member_required
def search_page(request: HttpRequest) -> HttpResponse:
    form = SearchForm(request.GET or None)
    context: dict = {"form": form, "result": None, "error": None}
    if form.is_valid():
        data = form.cleaned_data
        page = data.get("page") or 1
        filters = Filters(
            session_id=data.get("session"),
            role=data.get("role") or None,
            kind=data.get("kind") or None,
            since=data.get("since"),
            until=data.get("until"),
            include_rolled_back=data.get("include_rolled_back", False),
            before_id=data.get("before"),
        )
        window = data.get("window")
        try:
            context["result"] = search(
                data["q"],
                filters,
                limit=PAGE_SIZE,
                offset=(page - 1) * PAGE_SIZE,
                window=2 if window is None else window,
            )
        except InvalidQuery as exc:
            context["error"] = str(exc)
        context["page"] = page
        params = request.GET.copy()
        params["page"] = str(page + 1)
        context["next_query"] = params.urlencode()
        params["page"] = str(page - 1)
        context["prev_query"] = params.urlencode()
        result = context["result"]
        if result is not None and result.next_before is not None:
            older = request.GET.copy()
            older["before"] = str(result.next_before)
            older["page"] = "1"
            context["older_query"] = older.urlencode()
    status = 400 if form.is_bound and not form.is_valid() else 200
    return render(request, "search/search.html", context, status=status)
