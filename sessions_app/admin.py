"""Operator views of the store. Messages are read-only: the admin never edits or deletes history."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, TypedDict

from django.contrib import admin, messages
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.text import Truncator

from core.text import counted
from sessions_app.admin_base import HermesAdmin, ReadOnlyAdmin
from sessions_app.audit import admin_actor
from sessions_app.keys import issue_key, revoke_key, rotate_key, rotation_grace
from sessions_app.models import ApiKey, AuditEntry, Channel, Message, Session
from sessions_app.services import erase
from sessions_app.services.errors import NotFound, StateConflict

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations  # django-stubs' helper, for the checker only

    class _ChannelCounts(TypedDict):  # what ChannelAdmin.get_queryset annotates
        active_key_count: int
        session_total: int


class ApiKeyInline(admin.TabularInline):
    model = ApiKey
    extra = 0
    can_delete = False
    fields = (
        "display",
        "label",
        "scopes",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    )
    readonly_fields = fields

    @admin.display(description="key")
    def display(self, obj: ApiKey) -> str:
        return f"hm_{obj.prefix}_…"

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


def _show_key_once(request: HttpRequest, channel: Channel, plaintext: str) -> None:
    messages.warning(
        request,
        f"New key for channel “{channel.name}” — copy it now, it is not shown again: {plaintext}",
    )


@admin.register(Channel)
class ChannelAdmin(HermesAdmin):
    list_display = ("name", "description", "active_keys", "session_count", "created_at")
    search_fields = ("name", "description")
    inlines = [ApiKeyInline]
    actions = ["issue_new_key"]

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        if not change:
            issued = issue_key(
                obj,
                label=f"created in admin by {request.user.get_username()}",
                actor=admin_actor(request),
            )
            _show_key_once(request, obj, issued.plaintext)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Channel]:
        # The list's two counts in its one query (they were two queries per row).
        return (
            super()
            .get_queryset(request)
            .annotate(
                active_key_count=Count(
                    "keys",
                    filter=Q(keys__revoked_at__isnull=True)
                    & (Q(keys__expires_at__isnull=True) | Q(keys__expires_at__gt=timezone.now())),
                    distinct=True,
                ),
                session_total=Count("sessions", distinct=True),
            )
        )

    @admin.display(description="active keys", ordering="active_key_count")
    def active_keys(self, obj: WithAnnotations[Channel, _ChannelCounts]) -> int:
        return obj.active_key_count

    @admin.display(description="sessions", ordering="session_total")
    def session_count(self, obj: WithAnnotations[Channel, _ChannelCounts]) -> int:
        return obj.session_total

    @admin.action(description="Issue a new key for the selected channels (shown once)")
    def issue_new_key(self, request: HttpRequest, queryset: QuerySet[Channel]) -> None:
        for channel in queryset:
            issued = issue_key(
                channel,
                label=f"issued in admin by {request.user.get_username()}",
                actor=admin_actor(request),
            )
            _show_key_once(request, channel, issued.plaintext)


@admin.register(ApiKey)
class ApiKeyAdmin(HermesAdmin):
    list_display = (
        "__str__",
        "channel",
        "label",
        "scopes",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    )
    list_filter = (
        "channel",
        ("revoked_at", admin.EmptyFieldListFilter),
        ("expires_at", admin.EmptyFieldListFilter),
    )
    fields = (
        "channel",
        "label",
        "prefix",
        "key_hash",
        "scopes",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    )
    readonly_fields = tuple(f for f in fields if f != "label")  # only the label is editable
    actions = ["revoke", "rotate"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # keys are issued from the channel page, where the plaintext can be shown once

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # revoke instead: the row is the audit trail

    @admin.action(description="Revoke the selected keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        revoked = sum(revoke_key(k, actor=admin_actor(request)) for k in queryset)
        self.message_user(request, f"Revoked {counted(revoked, 'key')}.")

    @admin.action(
        description="Rotate the selected keys (new key shown once; old one expires after the "
        "grace period)"
    )
    def rotate(self, request: HttpRequest, queryset: QuerySet[ApiKey]):
        """Each selected key gets a successor with its channel and scopes, shown on the page
        this answers with (once: only its hash is kept); the old key keeps working for
        ``keys.rotation_grace_hours``, then answers 401 "expired"."""
        rotated, refused = [], []
        grace = rotation_grace()
        for api_key in queryset.select_related("channel"):
            try:
                rotated.append((api_key, rotate_key(api_key, admin_actor(request), grace)))
            except ValueError as exc:
                refused.append(str(exc))
        for problem in refused:
            self.message_user(request, f"Not rotated: {problem}.", messages.WARNING)
        if not rotated:
            return None
        for old, _ in rotated:
            old.refresh_from_db(fields=["expires_at"])
        # The admin's views answer "Cache-Control: no-store": no cache keeps the secrets.
        return TemplateResponse(
            request,
            "admin/sessions_app/rotated_keys.html",
            {
                **self.admin_site.each_context(request),
                "title": "New keys — copy them now",
                "rotated": rotated,
                "grace_hours": grace.total_seconds() / 3600,
                "opts": self.model._meta,
            },
        )


class ArchivedFilter(admin.SimpleListFilter):
    """Sessions archived by retention are out of the live set: left out unless asked for."""

    title = "archived"
    parameter_name = "archived"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin):
        return [("yes", "Archived"), ("all", "All")]

    def choices(self, changelist):
        yield {
            "selected": self.value() is None,
            "query_string": changelist.get_query_string(remove=[self.parameter_name]),
            "display": "Live (not archived)",
        }
        for value, label in self.lookup_choices:
            yield {
                "selected": self.value() == value,
                "query_string": changelist.get_query_string({self.parameter_name: value}),
                "display": label,
            }

    def queryset(self, request: HttpRequest, queryset: QuerySet[Session]):
        if self.value() == "all":
            return queryset
        return queryset.filter(archived_at__isnull=self.value() != "yes")


# The message kinds the erasure's confirmation counts, each under its column's heading.
ERASE_COLUMNS = {
    "live": "live",
    "summary": "summary",
    "archived": "archived",
    "rolled_back": "rolled back",
}


# The session's change page, group by group.
SESSION_GROUPS: tuple[tuple[str | None, tuple[str, ...]], ...] = (
    (None, ("id", "title", "channel", "external_id", "message_links")),
    ("Model", ("model", "context_window", "context_window_source")),
    (
        "Counters",
        (
            "live_messages",
            "live_tokens",
            "total_messages",
            "compressions",
            "next_position",
            "last_prompt_tokens",
            "last_completion_tokens",
            "last_usage_at",
        ),
    ),
    (
        "Guard state",
        ("cooldown_until", "thrash_lock_until", "failure_streak", "ineffective_streak"),
    ),
    ("Times", ("created_at", "updated_at", "last_activity_at", "last_reset_at", "archived_at")),
)


@admin.register(Session)
class SessionAdmin(HermesAdmin):
    # Typed as tuples of any length: compression's admin extends them.
    list_display: tuple[str, ...] = (
        "__str__",
        "channel",
        "model",
        "messages_shown",
        "live_tokens_shown",
        "compressions",
        "guard_state",
        "last_active",
    )
    list_filter: ClassVar[tuple[type[admin.ListFilter] | str, ...]] = (
        ArchivedFilter,
        "channel",
        "model",
        "context_window_source",
    )
    search_fields = ("id", "title", "external_id", "model")
    list_select_related = ("channel",)
    fieldsets = tuple((name, {"fields": fields}) for name, fields in SESSION_GROUPS)
    # Everything shown but the title is the service's to write.
    readonly_fields: ClassVar[tuple[str, ...]] = tuple(
        name for _, fields in SESSION_GROUPS for name in fields if name != "title"
    )

    actions = ["erase_sessions"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # sessions are opened by gateways through the API

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # history is never deleted, except by erasure on request (below)

    def has_erase_permission(self, request: HttpRequest) -> bool:
        """Erasure needs Django's "delete session" permission (superusers have it), which
        the admin's own delete never uses."""
        return request.user.has_perm("sessions_app.delete_session")

    @admin.action(
        description="Erase for good (privacy request): sessions, continuations, messages",
        permissions=["erase"],
    )
    def erase_sessions(self, request: HttpRequest, queryset: QuerySet[Session]):
        """A confirmation page that names everything that will go (channel, sessions with
        their titles, messages by kind, rows hanging off them); only its "Yes" erases."""
        try:
            plan = erase.plan_sessions(queryset.values_list("pk", flat=True))
        except NotFound as exc:
            self.message_user(request, f"{exc.message}", messages.ERROR)
            return None
        if not self.confirmed(request):
            return self._confirm_erase(request, queryset, plan)
        try:
            entry = erase.erase(plan, admin_actor(request))
        except StateConflict as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return None
        done = entry.details["deleted"]
        self.message_user(
            request,
            f"Erased {counted(done['sessions'], 'session')} and "
            f"{counted(sum(done['messages'].values()), 'message')} from the database and every "
            f"search index (audit entry #{entry.pk}).",
            messages.SUCCESS,
        )
        return None

    def _confirm_erase(
        self, request: HttpRequest, queryset: QuerySet[Session], plan: erase.ErasePlan
    ) -> TemplateResponse:
        explanation: list[str] = [
            format_html(
                "<strong>{}</strong> {}",
                "This deletes for good.",
                "Everything listed goes from the database and from every search index; it "
                "cannot be undone or restored except from a backup. An audit entry records who "
                "erased what scope and how many rows of each kind, never the content.",
            )
        ]
        if any(item.why != "chosen" for item in plan.sessions):
            explanation.append(
                "Continuations are included: a continuation carries on its parent's "
                "conversation with copies of its rows, so erasing a session erases every "
                "continuation of it."
            )
        related = ", ".join(f"{n} {name}" for name, n in plan.related.items())
        return self.confirmation(
            request,
            queryset,
            action="erase_sessions",
            title="Erase these sessions for good?",
            explanation=explanation,
            columns=("channel", "session", "title", "why", *ERASE_COLUMNS.values()),
            rows=[
                (
                    item.session.channel.name,
                    format_html("<code>{}</code>", item.session.pk),
                    item.session.title or "(untitled)",
                    item.why,
                    *(item.messages[kind] for kind in ERASE_COLUMNS),
                )
                for item in plan.sessions
            ],
            after=[f"Also deleted: {related}."] if related else [],
            yes="Yes, erase all of this for good",
        )

    @admin.display(description="messages (live of all)", ordering="live_messages")
    def messages_shown(self, obj: Session) -> str:
        return f"{obj.live_messages:,} of {obj.total_messages:,}"

    @admin.display(description="live tokens", ordering="live_tokens")
    def live_tokens_shown(self, obj: Session) -> str:
        return f"{obj.live_tokens:,}"

    @admin.display(description="last activity", ordering="last_activity_at")
    def last_active(self, obj: Session) -> str:
        return f"{timezone.localtime(obj.last_activity_at):%Y-%m-%d %H:%M}"

    @admin.display(description="guard")
    def guard_state(self, obj: Session) -> str:
        return obj.guards().describe() or "—"

    @admin.display(description="messages")
    def message_links(self, obj: Session) -> str:
        base = reverse("admin:sessions_app_message_changelist")
        links = [
            format_html(
                '<a href="{}?session__id__exact={}&kind={}">{}</a>', base, obj.pk, kind, label
            )
            for kind, label in Message.Kind.choices
        ]
        links.insert(0, format_html('<a href="{}?session__id__exact={}">all</a>', base, obj.pk))
        return format_html(" · ".join(["{}"] * len(links)), *links)


class KindFilter(admin.SimpleListFilter):
    title = "kind"
    parameter_name = "kind"

    def lookups(self, request, model_admin):
        return Message.Kind.choices

    def queryset(self, request, queryset):
        value = self.value()
        return queryset.of_kind(value) if value in Message.KIND_FILTERS else queryset


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = (
        "position",
        "session",
        "role",
        "kind_label",
        "preview",
        "token_count",
        "created_at",
    )
    list_filter = (KindFilter, "role", "session__channel", "is_fallback_summary")
    search_fields = ("content", "tool_call_id", "name")
    list_select_related = ("session",)
    show_full_result_count = False
    readonly_fields = [f.name for f in Message._meta.fields]

    def get_queryset(self, request):
        return super().get_queryset(request).defer("content_parts", "extra")

    @admin.display(description="kind")
    def kind_label(self, obj: Message) -> str:
        return Message.Kind(obj.kind).label

    @admin.display(description="content")
    def preview(self, obj: Message) -> str:
        if obj.content:
            return Truncator(obj.content).chars(120)
        if obj.tool_calls:
            names = ", ".join(c.get("function", {}).get("name", "?") for c in obj.tool_calls)
            return f"[tool calls: {names}]"
        return ""


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    """What operators did (console, admin, commands): read-only, never edited or deleted."""

    list_display = ("created_at", "actor", "action", "target", "status", "summary")
    list_filter = ("action", "status")
    search_fields = ("actor", "target")
    date_hierarchy = "created_at"
    readonly_fields = [f.name for f in AuditEntry._meta.fields]

    @admin.display(description="details")
    def summary(self, obj: AuditEntry) -> str:
        return Truncator(", ".join(f"{k}={v}" for k, v in (obj.details or {}).items())).chars(160)


from sessions_app import admin_memory  # noqa: E402, F401 (registers MemoryBlock)
