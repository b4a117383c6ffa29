"""``import_hermes`` end to end: find the store, read its config and memories, import each
conversation Hermes changed since the last run, and say what happened."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from django.db import DatabaseError, connection

from core.config import ConfigError, parse_config
from core.text import counted
from hermes_import.importer import import_conversation
from hermes_import.mapping import Conversation, conversations, plan_row
from hermes_import.models import ImportedSession
from hermes_import.provenance import infer
from hermes_import.reader import HermesReadError, HermesStore
from sessions_app.analyze import analyze
from sessions_app.models import Channel
from sessions_app.services.errors import ServiceError
from sessions_app.services.memory import Owner, set_block

MEMORY_DELIMITER = "\n§\n"
SHOWN = 50  # report lines of one kind shown


class ImportError_(Exception):
    """Nothing can be imported; the message says why."""


@dataclass
class Report:
    store: str = ""
    schema: str = ""
    conversations: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    failed: list[str] = field(default_factory=list)
    kinds: Counter = field(default_factory=Counter)
    chains_joined: int = 0
    links_joined: int = 0
    skipped: list[str] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)  # the first SHOWN of them
    unmatched_count: int = 0
    notes: list[str] = field(default_factory=list)
    config: list[str] = field(default_factory=list)
    memories: list[str] = field(default_factory=list)
    dry_run: bool = False

    def add_unmatched(self, lines: list[str]) -> None:
        """Count every copy not matched; keep the first few lines (a store can hold many)."""
        self.unmatched_count += len(lines)
        self.unmatched += lines[: max(0, SHOWN - len(self.unmatched))]

    def lines(self) -> list[str]:
        verb = "would import" if self.dry_run else "imported"
        out = [
            f"Hermes store: {self.store} ({self.schema})",
            f"Conversations: {self.conversations} -- {self.created} new, {self.updated} updated, "
            f"{self.unchanged} unchanged" + (f", {len(self.failed)} failed" if self.failed else ""),
            f"Rotation chains joined: {self.chains_joined} ({self.links_joined} Hermes sessions)",
            f"Messages {verb} by kind: "
            + (", ".join(f"{k} {n}" for k, n in sorted(self.kinds.items())) or "none"),
            f"Rows skipped or changed: {len(self.skipped)}",
        ]
        out += [f"  {line}" for line in self.skipped[:50]]
        if len(self.skipped) > 50:
            out.append(f"  ... and {len(self.skipped) - 50} more")
        out.append(f"Copies not matched: {self.unmatched_count}")
        out += [f"  {line}" for line in self.unmatched]
        if self.unmatched_count > len(self.unmatched):
            out.append(f"  ... and {self.unmatched_count - len(self.unmatched)} more")
        out += [f"Failed: {line}" for line in self.failed]
        out += [f"Note: {line}" for line in self.notes]
        out += self.config + self.memories
        return out


def locate(path: Path, profile: str | None) -> tuple[Path, Path | None]:
    """(state.db, the home it belongs to or None)."""
    path = path.expanduser()
    if profile:
        if not path.is_dir():
            raise ImportError_(f"{path}: --profile needs a Hermes home folder, not a file")
        path = path / "profiles" / profile
        if not path.is_dir():
            raise ImportError_(f"{path}: no such profile")
    if path.is_dir():
        db = path / "state.db"
        if not db.is_file():
            raise ImportError_(f"{path}: no state.db here (is this a Hermes home?)")
        return db, path
    if not path.exists():
        raise ImportError_(f"{path}: no such file or folder")
    return path, None


MEMORY_FILES = (("MEMORY.md", "memory"), ("USER.md", "user"))


def read_memories(home: Path | None) -> tuple[list[str], list[tuple[str, str, str]]]:
    """Report lines, and (file, block label, text) for each memory file that can be read."""
    if home is None:
        return [], []
    lines: list[str] = []
    found = []
    for name, label in MEMORY_FILES:
        file = home / "memories" / name
        if not file.is_file():
            continue
        try:
            text = file.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            lines.append(f"Memories: {name} could not be read ({exc})")
            continue
        entries = [e.strip() for e in text.split(MEMORY_DELIMITER) if e.strip()]
        lines.append(
            f"Memories: {name} has {counted(len(entries), 'entry')} ({len(text):,} characters)"
        )
        found.append((name, label, MEMORY_DELIMITER.join(entries)))
    return lines, found


def import_memories(
    channel: Channel | None, found: list[tuple[str, str, str]], dry_run: bool
) -> list[str]:
    """Each memory file becomes the channel's memory block of its label (replaced on a re-run),
    which every session of the channel carries after its system prompt."""
    lines = []
    for name, label, text in found:
        if dry_run or channel is None:
            lines.append(f"Memories: {name} would become the channel's memory block '{label}'")
            continue
        try:
            set_block(Owner(channel=channel), label, text)
        except ServiceError as exc:
            lines.append(f"Memories: {name} not imported: {exc.message}")
            continue
        lines.append(f"Memories: {name} is the channel's memory block '{label}'")
    return lines


def read_config(home: Path | None) -> list[str]:
    if home is None or not (home / "config.yaml").is_file():
        return []
    file = home / "config.yaml"
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return [f"Config: {file} is not valid YAML ({first}); sessions are imported anyway"]
    adapted: list[Any] = []
    try:
        parse_config(data, str(file), adapted=adapted)
    except ConfigError as exc:
        return [f"Config: {file} would not start the service:\n  {exc}"]
    changes = adapted[0]
    out = [f"Config: {file} starts this service as it is (HERMES_CONFIG={file})"]
    out += [f"  mapped: {line}" for line in changes.moved]
    if changes.unused:
        out.append(f"  accepted, not used here: {', '.join(changes.unused)}")
    out.append(f"  sections for Hermes Agent alone, ignored: {len(changes.foreign_sections)}")
    out += [f"  note: {line}" for line in changes.notes]
    return out


def run(
    path: Path,
    *,
    channel_name: str = "hermes",
    profile: str | None = None,
    dry_run: bool = False,
    memories: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> Report:
    db, home = locate(path, profile)
    try:
        store = HermesStore(db)
    except HermesReadError as exc:
        raise ImportError_(str(exc)) from None
    report = Report(store=str(db), dry_run=dry_run)
    report.schema = f"schema version {store.version}" if store.version else "no schema version"
    report.config = read_config(home)
    report.memories, memory_files = read_memories(home)
    try:
        sessions = store.sessions()
    except sqlite3.DatabaseError as exc:
        raise ImportError_(f"{db}: cannot be read ({exc}); nothing was imported") from None
    broken: dict[str, str] = {}
    try:
        fingerprints = store.fingerprints()
    except sqlite3.DatabaseError:
        # A damaged page: read the sessions one by one and leave out those it holds.
        fingerprints, broken = store.fingerprint_each(list(sessions))
    prints = {sid: fp.key() for sid, fp in fingerprints.items()}
    if connection.vendor == "sqlite":
        # The import only appends: mapping the growing file would count every page it writes
        # in this process's resident memory (they are the OS page cache's, but look like ours).
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA mmap_size=0")
    known = dict(
        ImportedSession.objects.filter(store=store.identity).values_list("hermes_id", "fingerprint")
    )
    groups = conversations(sessions)
    report.conversations = len(groups)
    channel = None
    if not dry_run:
        channel, _ = Channel.objects.get_or_create(
            name=channel_name, defaults={"description": "Imported from Hermes Agent"}
        )
    if memories:
        report.memories += import_memories(channel, memory_files, dry_run)
    elif memory_files:
        report.memories.append(
            "Memories: not imported (pass --memories to make them the channel's memory blocks; "
            "Hermes's stored system prompts already hold a snapshot of them)"
        )
    for done, conversation in enumerate(groups, 1):
        if len(conversation.links) > 1:
            report.chains_joined += 1
            report.links_joined += len(conversation.links)
        damaged = [s for s in conversation.links if s in broken]
        if damaged:
            report.failed.append(
                f"conversation {conversation.tip}: the rows of session {damaged[0]} cannot be "
                f"read ({broken[damaged[0]]}); skipped"
            )
        elif all(known.get(s) == prints.get(s, "0:0:0:0") for s in conversation.links):
            report.unchanged += 1
        else:
            _one(store, channel, conversation, sessions, prints, known, report, dry_run)
        if progress:
            progress(done, len(groups))
    store.close()
    if not dry_run and report.created + report.updated:
        analyze()
    return report


def _one(
    store: HermesStore,
    channel: Channel | None,
    conversation: Conversation,
    sessions: dict[str, dict[str, Any]],
    prints: dict[str, str],
    known: dict[str, str],
    report: Report,
    dry_run: bool,
) -> None:
    name = f"conversation {conversation.tip}"
    skipped: list[str] = []
    try:
        rows = [
            planned
            for row in store.messages(conversation.links)
            if (planned := plan_row(row, skipped)) is not None
        ]
    except sqlite3.DatabaseError as exc:  # a damaged page under this conversation's rows
        report.failed.append(f"{name}: its rows cannot be read ({exc}); skipped")
        return
    report.skipped += skipped
    if dry_run or channel is None:  # a dry run has no channel
        infer(conversation, rows)
        report.notes += [f"{name}: {n}" for n in conversation.notes]
        report.add_unmatched(conversation.unmatched)
        new = any(s not in known for s in conversation.links)
        report.created += new
        report.updated += not new
        for row in rows:
            report.kinds[("summary " if row.summary else "") + row.kind] += 1
        return
    try:
        outcome = import_conversation(channel, store.identity, conversation, sessions, rows, prints)
    except DatabaseError as exc:
        report.failed.append(f"{name}: not imported ({exc}); nothing of it was written")
        return
    report.notes += [f"{name}: {n}" for n in conversation.notes]
    report.add_unmatched(conversation.unmatched)
    report.created += outcome.created
    report.updated += not outcome.created
    report.kinds.update(outcome.kinds)
