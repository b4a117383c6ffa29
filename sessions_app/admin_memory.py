"""Memory blocks in the admin: edited through the same service as the API, so every session
that carries a block moves its live tokens by exactly what changed."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.db import transaction
from django.http import HttpRequest
from django.utils.text import Truncator

from sessions_app.admin_base import HermesAdmin
from sessions_app.models import MemoryBlock
from sessions_app.services.errors import ServiceError
from sessions_app.services.memory import Owner, check_block, delete_block, set_block


class MemoryBlockForm(forms.ModelForm):
    class Meta:
        model = MemoryBlock
        fields = ("channel", "session", "label", "text")
        widgets = {"text": forms.Textarea(attrs={"rows": 12})}

    def clean(self):
        super().clean()
        data = self.cleaned_data  # what ModelForm.clean returns
        if bool(data.get("channel")) == bool(data.get("session")):
            raise forms.ValidationError(
                "Choose a channel (every session of it carries the block) or one session, "
                "not both and not neither."
            )
        try:
            check_block(data.get("label") or "", data.get("text") or "")
        except ServiceError as exc:
            raise forms.ValidationError(exc.message) from None
        return data


def _owner(block: MemoryBlock) -> Owner:
    if block.session_id:
        return Owner(session=block.session)
    return Owner(channel=block.channel)


@admin.register(MemoryBlock)
class MemoryBlockAdmin(HermesAdmin):
    form = MemoryBlockForm
    list_display = ("label", "owner", "preview", "token_count", "updated_at")
    list_filter = ("channel",)
    search_fields = ("label", "text")
    raw_id_fields = ("session",)
    readonly_fields = ("token_count", "updated_at")

    @admin.display(description="carried by")
    def owner(self, obj: MemoryBlock) -> str:
        if obj.session_id:
            return f"session {obj.session_id}"
        return f"every session of {obj.channel}"

    @admin.display(description="text")
    def preview(self, obj: MemoryBlock) -> str:
        return Truncator(obj.text).chars(100)

    @transaction.atomic
    def save_model(self, request: HttpRequest, obj: MemoryBlock, form, change: bool) -> None:
        if change:
            # A move to another owner or label is the old block gone and a new one made.
            old = MemoryBlock.objects.get(pk=obj.pk)
            if (old.channel_id, old.session_id, old.label) != (
                obj.channel_id,
                obj.session_id,
                obj.label,
            ):
                delete_block(_owner(old), old.label)
        saved, _ = set_block(_owner(obj), obj.label, obj.text)
        obj.pk, obj.token_count = saved.pk, saved.token_count

    def delete_model(self, request: HttpRequest, obj: MemoryBlock) -> None:
        delete_block(_owner(obj), obj.label)

    def delete_queryset(self, request: HttpRequest, queryset) -> None:
        for block in queryset:
            delete_block(_owner(block), block.label)
