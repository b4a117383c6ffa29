"""``manage.py copy_database URL``: copy everything in the configured database (usually the
embedded SQLite file) into another one (usually a new PostgreSQL database), then verify counts.

Run it with the web and worker processes stopped (or the gateways paused): rows written after a
table was copied are not copied. The target must be empty; it is migrated first, which creates
its own content types, permissions and the worker's schedules, so references to those are
mapped by their natural keys rather than copied by id. Not copied: login sessions (operators log
in again) and tasks still waiting in the ORM broker's queue (let the workers drain it first).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import dj_database_url
from django.apps import apps
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.core.management.color import no_style
from django.db import DatabaseError, connections, models, transaction
from tqdm import tqdm

from sessions_app.analyze import analyze
from sessions_app.bulk import keeping_timestamps

TARGET = "copy_target"
SKIPPED = {
    "contenttypes.contenttype",  # created by migrate on the target; mapped by natural key
    "auth.permission",  # likewise
    "sessions.session",  # operators' logins
    "django_q.ormq",  # queued tasks: drain the queue before moving
}
UNIQUE_BY_NAME = {"django_q.schedule"}  # the target's migrations created some already


SUPPORTED = {"django.db.backends.postgresql", "django.db.backends.sqlite3"}


def _identity(settings: dict) -> tuple:
    """What makes two connection settings the same database."""
    if "sqlite" in settings["ENGINE"]:  # Django's backend or ours (core.sqlite_backend)
        return ("sqlite", Path(settings["NAME"]).resolve())
    return (
        "postgresql",
        settings.get("HOST") or "",
        str(settings.get("PORT") or ""),
        settings["NAME"],
    )


def _models() -> list[type[models.Model]]:
    """Every concrete table, each after the tables it points to (self-references aside)."""
    pending = {
        m._meta.label_lower: m
        for m in apps.get_models(include_auto_created=True)
        if not m._meta.proxy and m._meta.managed and m._meta.label_lower not in SKIPPED
    }
    ordered: list[type[models.Model]] = []
    while pending:
        ready = [
            label
            for label, model in pending.items()
            if all(
                # related_model is a class once the apps are loaded, never the string "self"
                f.related_model._meta.label_lower not in pending  # type: ignore[union-attr]
                or f.related_model is model
                for f in model._meta.concrete_fields
                if f.is_relation and f.related_model is not None
            )
        ]
        if not ready:
            raise CommandError(f"Cannot order tables with circular references: {sorted(pending)}")
        for label in sorted(ready):
            ordered.append(pending.pop(label))
    return ordered


class Command(BaseCommand):
    help = "Copy every row of this database into another, empty one, then verify the counts."

    def add_arguments(self, parser) -> None:
        parser.add_argument("url", help="the target, e.g. postgres://user:pass@host:5432/hermes")
        parser.add_argument("--batch", type=int, default=2_000, help="rows per insert")

    def handle(self, *args, url: str, batch: int, **options) -> None:
        if batch < 1:
            raise CommandError("--batch must be at least 1.")
        try:
            target = dj_database_url.parse(url)
        except ValueError as exc:
            raise CommandError(f"{url!r} is not a database URL: {exc}") from None
        if target["ENGINE"] not in SUPPORTED:
            raise CommandError(
                f"{url!r}: the target must be PostgreSQL (postgres://…) or SQLite (sqlite:///…)."
            )
        if not target["NAME"] or str(target["NAME"]) == ":memory:":
            raise CommandError(f"{url!r} names no database to copy into.")
        configured = connections.configure_settings({"default": target})["default"]
        connections.settings[TARGET] = configured
        try:
            self._copy(batch)
        finally:
            connections[TARGET].close()
            del connections.settings[TARGET]

    def _copy(self, batch: int) -> None:
        self.skipped: dict[str, int] = {}
        source, target = connections["default"], connections[TARGET]
        if _identity(source.settings_dict) == _identity(target.settings_dict):
            raise CommandError("The target is the database this service already uses.")
        try:
            target.ensure_connection()
        except DatabaseError as exc:
            where = target.settings_dict.get("HOST") or target.settings_dict["NAME"]
            raise CommandError(
                f"Cannot open the target database ({where}): {str(exc).strip()[:300]}"
            ) from None
        tables = set(target.introspection.table_names())
        if tables and "django_migrations" not in tables:
            raise CommandError(
                f"The target holds {len(tables)} table(s) of something else "
                f"({', '.join(sorted(tables)[:3])}…); copy into an empty database."
            )
        self.stdout.write(f"Migrating the target ({target.vendor})…")
        call_command("migrate", database=TARGET, interactive=False, verbosity=0)
        plan = _models()
        busy = {
            m._meta.label: n
            for m in plan
            if m._meta.label_lower not in UNIQUE_BY_NAME
            and (n := m._default_manager.using(TARGET).count())
        }
        if busy:
            raise CommandError(
                f"The target already holds data ({busy}); copy into an empty database."
            )
        remap = self._remaps()
        totals = []
        with keeping_timestamps(plan):
            for model in plan:
                copied = self._copy_table(model, batch, remap)
                totals.append((model, copied))
        self._reset_sequences([m for m, _ in totals])
        self._verify(totals)
        if analyze(TARGET, tuple(m._meta.db_table for m, _ in totals)):
            self.stdout.write("Analyzed the copied tables (fresh statistics for the planner).")

    def _remaps(self) -> dict[type[models.Model], dict]:
        """Source id -> target id for the rows migrate created on both sides."""
        on_target = ContentType.objects.db_manager(TARGET)
        types = {
            ct.pk: on_target.get_or_create(app_label=ct.app_label, model=ct.model)[0].pk
            for ct in ContentType.objects.using("default")
        }
        # Looked up with the target's id of a content type, None where it has none.
        target_perms: dict[tuple[int | None, str], int] = {
            (p.content_type_id, p.codename): p.pk for p in Permission.objects.using(TARGET)
        }
        perms = {
            p.pk: target_perms.get((types.get(p.content_type_id), p.codename))
            for p in Permission.objects.using("default")
        }
        stale = [pk for pk, mapped in perms.items() if mapped is None]
        if stale:
            names = Permission.objects.filter(pk__in=stale).values_list("codename", flat=True)
            self.stderr.write(
                f"Not copied: grants of {len(stale)} permission(s) the target does not define "
                f"(models no longer installed): {', '.join(sorted(names))}"
            )
        return {ContentType: types, Permission: perms}

    def _copy_table(self, model: type[models.Model], batch: int, remap: dict) -> int:
        meta = model._meta
        fields = meta.concrete_fields
        mapped: list[tuple[str, Callable]] = [
            (f.attname, remap[f.related_model].get)
            for f in fields
            if f.is_relation and f.related_model in remap
        ]
        existing: set = set()
        if meta.label_lower in UNIQUE_BY_NAME:
            existing = set(model._default_manager.using(TARGET).values_list("name", flat=True))
        query = model._default_manager.using("default").order_by("pk")
        total = query.count()
        copied = 0
        skipped = 0
        last = None
        with (
            tqdm(total=total, unit="row", desc=meta.label, file=self.stderr) as bar,
            transaction.atomic(using=TARGET),  # self-references are checked at commit
        ):
            while True:
                page = query if last is None else query.filter(pk__gt=last)
                rows = list(page[:batch])
                if not rows:
                    break
                last = rows[-1].pk
                out = []
                for row in rows:
                    dangling = False
                    for attname, lookup in mapped:
                        value = getattr(row, attname)
                        if value is not None:
                            setattr(row, attname, lookup(value))
                            dangling = dangling or getattr(row, attname) is None
                    if dangling:  # a grant of a permission the target does not have
                        skipped += 1
                        continue
                    if meta.label_lower in UNIQUE_BY_NAME:  # models with a name field
                        if row.name in existing:  # type: ignore[attr-defined]
                            continue
                        row.pk = None  # nothing refers to it; the target's ids are its own
                    row._state.db = TARGET
                    out.append(row)
                model._default_manager.using(TARGET).bulk_create(out, batch_size=batch)
                copied += len(out)
                bar.update(len(rows))
        self.skipped[meta.label] = skipped
        return copied

    def _reset_sequences(self, copied: Iterable[type[models.Model]]) -> None:
        target = connections[TARGET]
        statements = target.ops.sequence_reset_sql(no_style(), list(copied))
        with target.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)

    def _verify(self, totals: list[tuple[type[models.Model], int]]) -> None:
        wrong = []
        self.stdout.write(f"{'table':<36} {'source':>10} {'target':>10}")
        for model, copied in totals:
            source = model._default_manager.using("default").count()
            target = model._default_manager.using(TARGET).count()
            skipped = self.skipped.get(model._meta.label, 0)
            if model._meta.label_lower in UNIQUE_BY_NAME:
                ok = target >= source
            else:
                ok = source - skipped == target == copied
            self.stdout.write(
                f"{model._meta.label:<36} {source:>10,} {target:>10,} {'' if ok else 'MISMATCH'}"
            )
            if not ok:
                wrong.append(model._meta.label)
        if wrong:
            raise CommandError(f"Counts differ for {', '.join(wrong)}: see the table above.")
        self.stdout.write(self.style.SUCCESS("Copied; every count matches."))
