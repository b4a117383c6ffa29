"""The base of every model admin here (sessions_app and compression)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponseRedirect
from django.template.response import TemplateResponse


class HermesAdmin(admin.ModelAdmin):
    """Every model admin here: selected ids that are not ids of this model (a hand-made POST)
    are refused with a message instead of failing inside Django's ``pk__in`` filter."""

    def response_action(self, request: HttpRequest, queryset: QuerySet):
        for value in request.POST.getlist(ACTION_CHECKBOX_NAME):
            try:
                pk = self.model._meta.pk.to_python(value)
                if isinstance(pk, int) and not 0 < pk < 2**63:  # beyond any database integer
                    raise ValueError(value)
            except (ValidationError, ValueError):
                self.message_user(
                    request,
                    f"{value[:40]!r} is not the id of a {self.model._meta.verbose_name}; "
                    "nothing was done.",
                    messages.ERROR,
                )
                return HttpResponseRedirect(request.get_full_path())
        return super().response_action(request, queryset)

    @staticmethod
    def confirmed(request: HttpRequest) -> bool:
        """Whether an action's request comes from the Yes of its confirmation page."""
        return request.POST.get("confirm") == "yes"

    def confirmation(
        self,
        request: HttpRequest,
        queryset: QuerySet,
        *,
        action: str,
        title: str,
        explanation: Sequence[str],
        columns: Sequence[str],
        rows: Iterable[Sequence[object]],
        yes: str,
        after: Sequence[str] = (),
    ) -> TemplateResponse:
        """The page an action shows before it acts (admin/confirm_action.html): what it does
        (``explanation``, paragraphs), a table of what it will act on, what else (``after``),
        and a form that posts the same selection to the same action again with
        ``confirm=yes``, under the button ``yes``, or goes back."""
        return TemplateResponse(
            request,
            "admin/confirm_action.html",
            {
                **self.admin_site.each_context(request),
                "title": title,
                "explanation": explanation,
                "columns": columns,
                "rows": rows,
                "after": after,
                "selected": [str(pk) for pk in queryset.values_list("pk", flat=True)],
                "action": action,
                "yes": yes,
                "opts": self.model._meta,
            },
        )


class ReadOnlyAdmin(HermesAdmin):
    """History and audit trails: browsable, never added, edited or deleted from the admin."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
