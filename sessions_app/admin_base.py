"""The base of every model admin here (sessions_app and compression)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponseRedirect


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


class ReadOnlyAdmin(HermesAdmin):
    """History and audit trails: browsable, never added, edited or deleted from the admin."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
