"""One model instance read by one plain statement, every column converted as the ORM converts it.

For the reads every API request makes (its key, a gateway's session): ``Model.objects.raw()``
spends more building the instance than SQLite spends answering -- 90-125 µs a key on SQLite,
where the statement on a cursor takes 25 -- because each call works out the columns' order,
their converters and the model's init order again. Those are fixed per model; here they are
worked out once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model
from django.db.models.expressions import Col

from core.sqlite_backend.base import qmark

M = TypeVar("M", bound=Model)


def columns(model: type[Model], alias: str) -> str:
    """The model's concrete columns as :func:`read_one` takes them: ``alias.col, ...``."""
    return _columns(model, alias, connection.vendor)


@cache
def _columns(model: type[Model], alias: str, vendor: str) -> str:
    return ", ".join(f"{alias}.{connection.ops.quote_name(c)}" for c in _attnames(model)[1])


@cache
def _attnames(model: type[Model]) -> tuple[list[str], list[str], list[Field]]:
    fields = list(model._meta.concrete_fields)
    return [f.attname for f in fields], [f.column for f in fields], fields


def converters(col: Col, db: BaseDatabaseWrapper) -> list[Callable[..., Any]]:
    """What the ORM applies to a value it reads from ``col`` (a field's ``get_col``), as its
    compiler finds them: the backend's converters, then the column's (a foreign key's are its
    target's). On SQLite a time arrives as text, a flag as 0 or 1, a UUID as hex. Each is
    called ``converter(value, col, db)``."""
    return [*db.ops.get_db_converters(col), *col.get_db_converters(db)]


@cache
def _converters(model: type[Model], vendor: str) -> list[tuple[Col, list[Callable[..., Any]]]]:
    """Per column of ``model``, its converters; ``vendor`` keys the cache (they are the
    backend's)."""
    db = connections[DEFAULT_DB_ALIAS]
    cols = [field.get_col(model._meta.db_table) for field in _attnames(model)[2]]
    return [(col, converters(col, db)) for col in cols]


def from_row(model: type[M], row: Sequence[Any]) -> M:
    """The instance for a row whose first columns are :func:`columns`' (more may follow)."""
    db = connections[DEFAULT_DB_ALIAS]  # the proxy's every attribute is a thread-local lookup
    names = _attnames(model)[0]
    values = []
    for (col, convert), value in zip(_converters(model, db.vendor), row, strict=False):
        for converter in convert:
            value = converter(value, col, db)
        values.append(value)
    return model.from_db(db.alias, names, values)


def fetch_one(sql: str, params: Sequence[Any]) -> tuple | None:
    """The first row of ``sql``, as the driver gives it.

    On SQLite, straight on the driver's connection: Django's cursor spends 20 µs a statement
    around a 5 µs read of a key (its creation, its wrappers). What the cursor does that
    matters is done here too: the health check, the connection opened if need be, a broken
    transaction refused, the driver's errors raised as Django's. Where statements are logged
    or wrapped (``DEBUG``, a test that counts them), through Django's cursor as any other."""
    db = connections[DEFAULT_DB_ALIAS]  # the proxy's every attribute is a thread-local lookup
    if db.vendor != "sqlite" or db.queries_logged or db.execute_wrappers:
        with db.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone()
    db.close_if_health_check_failed()
    db.ensure_connection()
    db.validate_no_broken_transaction()
    with db.wrap_database_errors:
        return db.connection.execute(qmark(sql), params).fetchone()


def read_one(model: type[M], sql: str, params: Sequence[Any]) -> tuple[M, tuple] | None:
    """The first row of ``sql`` as a ``model`` instance, with the columns after the model's
    (as they came); None if there is no row. ``sql`` selects :func:`columns` first."""
    row = fetch_one(sql, params)
    if row is None:
        return None
    return from_row(model, row), tuple(row[len(_attnames(model)[0]) :])
