"""Hermes homes written by the real Hermes Agent, as the importer's test data.

A :class:`Scenario` is a conversation typed into the real ``hermes chat -q --resume`` (through
:class:`tests.hermes_peer.HermesHome`) against the loopback model, in two phases: the second
continues the first after a first import, for the incremental one. Each planted fact is a word
that the conversation holds in exactly one original message (a user's text, a tool's output, a
summary), so after any import a search for it must show exactly one hit.

The loopback model (:class:`HomeAgent`) never repeats the user: it answers "Noted." and "Done.",
calls Hermes's ``terminal`` tool when asked to ``run `cmd```, writes a summary with a fact of its
own each time Hermes asks for one, and reports a prompt size over Hermes's threshold for the
tool call of a turn marked ``compact`` (Hermes compacts after a tool call once the reported
prompt passes its threshold), and a small one otherwise.

The context is 64,000 tokens (Hermes's minimum) and ``compression.target_ratio`` 0.1, so
Hermes's tail budget is about 5,400 tokens; one long reply in the middle (about 35,000
characters) is past it, and Hermes then prunes every older tool result over 200 characters in
the copies it writes -- the one in the protected head included.

Homes are recorded once per parameter set and kept under ``var/hermes_homes/`` (both test
passes share them). Small homes recorded this way are committed under
``tests/data/hermes_homes/`` (``sqlite3`` dumps of the tables the importer reads) for where the
peer cannot install; ``python -m tests.hermes_homes`` records them again (see the README
there).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from compression.testing.fake_model import FakeModelServer, Reply
from tests.hermes_peer import VERSION, HermesHome, ScriptedAgent, is_summary_request, text_of

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "var" / "hermes_homes"
COMMITTED = ROOT / "tests" / "data" / "hermes_homes"
# Bump when the recording changes in a way the parameters do not show.
RECORDER = 1
CONTEXT = 64_000
OVER_THRESHOLD = 60_000  # Hermes's threshold at a 64,000 window is 54,400 (85%)
SMALL_PROMPT = 2_000
# A message asking for this gets a reply of about 35,000 characters (past Hermes's tail budget;
# a reply, not a tool output: Hermes pulls a tool result at the tail's edge into the tail).
LONG_REPLY = "long report"
# The tables the importer reads; a committed dump holds only these (Hermes's FTS tables and
# triggers, and its gateway bookkeeping, are left out).
DUMPED = ("schema_version", "sessions", "messages", "system_prompts", "state_meta")


@dataclass(frozen=True)
class Turn:
    text: str
    compact: bool = False  # report a prompt over the threshold for this turn's tool call


@dataclass(frozen=True)
class Fact:
    word: str
    phase: int
    where: str  # user, tool or summary: the kind of original message that holds it
    note: str = ""


@dataclass(frozen=True)
class Scenario:
    name: str
    in_place: bool
    phases: tuple[tuple[Turn, ...], ...]
    facts: tuple[Fact, ...]
    summaries: tuple[str, ...]  # the fact each successive summary carries

    def key(self) -> str:
        data = {"scenario": asdict(self), "hermes": VERSION, "recorder": RECORDER}
        digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
        return f"{self.name}-{digest[:12]}"

    @property
    def compactions(self) -> list[int]:
        return [sum(t.compact for t in phase) for phase in self.phases]

    def config(self) -> dict[str, Any]:
        return {
            "compression": {
                "in_place": self.in_place,
                "target_ratio": 0.1,
                "protect_last_n": 8,
            }
        }


def _reverse(word: str) -> str:
    return word[::-1]


def _conversation(tag: str, in_place: bool) -> Scenario:
    """The same conversation for both modes. Its head (the first three messages) holds a user
    message typed with blanks around it and a tool output over 200 characters, which Hermes
    prunes in every copy once a long reply in the middle (about 35,000 characters) has used up its
    tail budget; messages typed with blanks and a pasted
    ``<memory-context>`` block (which Hermes replays cleaned, keeping what was sent in
    ``api_content``) are carried in a later compaction's tail. Three compactions in the first
    phase, one more in the second."""
    t = tag
    facts = [
        Fact(f"{t}headuser", 1, "user", "the first message, typed with blanks around it"),
        Fact(f"{t}headtool", 1, "tool", "the head's tool output (over 200 characters)"),
        Fact(f"{t}middle", 1, "user", "summarised by the first compaction"),
        Fact(f"{t}longreply", 1, "assistant", "a long reply in the middle"),
        Fact(f"{t}padded", 1, "user", "typed with blanks; carried in the second tail"),
        Fact(f"{t}recalled", 1, "user", "inside a pasted memory-context block"),
        Fact(f"{t}memctx", 1, "user", "beside that block; carried in the second tail"),
        Fact(f"{t}tailtool", 1, "tool", "a tool output carried in two tails"),
        Fact(f"{t}late", 1, "user", "after the third compaction"),
        Fact(f"{t}second", 2, "user", "the second phase"),
        Fact(f"{t}secondtool", 2, "tool", "the second phase's tool output, carried in a tail"),
        Fact(f"{t}newest", 2, "user", "the newest message"),
    ]
    summaries = tuple(f"{t}summary{n}" for n in range(1, 5))
    facts += [Fact(word, 1 if n < 3 else 2, "summary") for n, word in enumerate(summaries)]
    # Commands echo their word reversed: only the tool's output holds it.
    head = f"echo {_reverse(t + 'headtool')} | rev; seq 1 60"
    phase1 = (
        Turn(f"  \n  run `{head}` please, {t}headuser  \n"),
        Turn(f"the first middle fact is {t}middle"),
        Turn(f"now write the {LONG_REPLY} for {_reverse(t + 'longreply')}"),
        Turn("fact: the colour is teal"),
        Turn("fact: the dog is Rex"),
        Turn("fact: the river is the Nile"),
        Turn("run `echo one`", compact=True),
        Turn(f"\t  remember {t}padded with the blanks I typed \n\n"),
        Turn(
            "<memory-context>[System note: The following is recalled memory context, NOT new "
            f"user input. Treat as informational background data.] {t}recalled</memory-context>"
            f" and the fact {t}memctx"
        ),
        Turn(f"run `echo {_reverse(t + 'tailtool')} | rev`", compact=True),
        Turn("fact: the city is Oslo"),
        Turn("run `echo three`", compact=True),
        Turn(f"the late fact is {t}late"),
    )
    phase2 = (
        Turn(f"back again: {t}second"),
        Turn(f"run `echo {_reverse(t + 'secondtool')} | rev`"),
        Turn("fact: the tree is an oak"),
        Turn("run `echo four`", compact=True),
        Turn(f"and the newest fact, {t}newest"),
    )
    return Scenario(
        name=f"{'inplace' if in_place else 'rotation'}",
        in_place=in_place,
        phases=(phase1, phase2),
        facts=tuple(facts),
        summaries=summaries,
    )


INPLACE = _conversation("zqi", in_place=True)
ROTATION = _conversation("zqr", in_place=False)
SCENARIOS = {s.name: s for s in (INPLACE, ROTATION)}


@dataclass
class HomeAgent(ScriptedAgent):
    """The loopback model for recorded homes: replies that never repeat the user (a planted fact
    stays in one message), a summary with the scenario's next fact, and a prompt over the
    threshold for the tool call of a turn marked ``compact``."""

    summary_facts: tuple[str, ...] = ()
    big: dict[str, bool] = field(default_factory=lambda: {"on": False})
    summaries_written: int = 0

    def __post_init__(self) -> None:
        self.prompt_tokens = self._prompt_tokens
        self.summary = self._summary

    def _prompt_tokens(self, body: dict[str, Any] | None) -> int:
        messages = (body or {}).get("messages") or []
        if self.big["on"] and messages and messages[-1].get("role") == "user":
            return OVER_THRESHOLD
        return SMALL_PROMPT

    def _summary(self, body: dict[str, Any] | None) -> str:
        n = self.summaries_written
        self.summaries_written += 1
        fact = self.summary_facts[n] if n < len(self.summary_facts) else f"summary{n}"
        return f"## Active Task\nNone.\n## Completed Actions\n1. Talked (loopback) {fact}."

    def answer(self, body: dict[str, Any] | None) -> Reply:
        reply = super().answer(body)
        if reply.tool_calls or is_summary_request(body) or "tools" not in (body or {}):
            return reply
        messages = (body or {}).get("messages") or []
        last = messages[-1] if messages else {}
        asked = text_of(last)
        if last.get("role") == "user" and LONG_REPLY in asked:
            word = asked.rsplit(" ", 1)[-1][::-1]
            lines = "".join(f"Line {n} of the report.\n" for n in range(1, 1500))
            return Reply(f"Report {word}.\n{lines}", usage=reply.usage)
        return Reply("Done." if last.get("role") == "tool" else "Noted.", usage=reply.usage)


@dataclass
class Recorded:
    """One recorded scenario: a ``state.db`` after each phase and what the recording saw."""

    scenario: Scenario
    folder: Path
    manifest: dict[str, Any]

    def state_db(self, phase: int) -> Path:
        return self.folder / f"phase{phase}" / "state.db"

    def facts(self, up_to_phase: int) -> list[Fact]:
        return [f for f in self.scenario.facts if f.phase <= up_to_phase]


def _snapshot(db: Path, dest: Path) -> None:
    """A consistent copy of a store Hermes may still hold open in WAL mode."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    source = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    target = sqlite3.connect(dest)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()


def record(scenario: Scenario, folder: Path) -> dict[str, Any]:
    """Drive the real Hermes through the scenario; write ``phase1/state.db``, ``phase2/state.db``
    and ``manifest.json`` into ``folder``. Fails if Hermes did not compact as planned."""
    agent = HomeAgent(summary_facts=scenario.summaries)
    tips: list[str] = []
    with tempfile.TemporaryDirectory(prefix="hermes-home-") as scratch, FakeModelServer() as server:
        server.script.default = agent.behaviour()
        home = HermesHome(
            Path(scratch) / "home",
            server.base_url,
            context_length=CONTEXT,
            config=scenario.config(),
        )
        sid: str | None = None
        for phase, turns in enumerate(scenario.phases, 1):
            before = len(agent.summary_requests)
            for turn in turns:
                agent.big["on"] = turn.compact
                sid = home.chat(turn.text, resume=sid).session_id
            agent.big["on"] = False
            made = len(agent.summary_requests) - before
            planned = scenario.compactions[phase - 1]
            if made != planned:
                raise RuntimeError(
                    f"{scenario.name} phase {phase}: Hermes compacted {made} times, "
                    f"{planned} planned"
                )
            assert sid is not None
            tips.append(sid)
            _snapshot(home.state_db, folder / f"phase{phase}" / "state.db")
        (folder / "config.yaml").write_text(
            (home.path / "config.yaml").read_text(encoding="utf-8"), encoding="utf-8"
        )
    manifest = {
        "scenario": scenario.name,
        "hermes_agent": VERSION,
        "recorder": RECORDER,
        "tips": tips,
        "compactions": scenario.compactions,
        "facts": [asdict(f) for f in scenario.facts],
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def cached(scenario: Scenario) -> Recorded:
    """The scenario recorded by the real Hermes, once per parameter set (kept under
    ``var/hermes_homes/``; a second test pass or session reuses it)."""
    folder = CACHE / scenario.key()
    with _locked(CACHE / f".{scenario.name}.lock"):
        manifest_file = folder / "manifest.json"
        if not manifest_file.exists():
            partial = folder.with_name(folder.name + ".partial")
            shutil.rmtree(partial, ignore_errors=True)
            record(scenario, partial)
            shutil.rmtree(folder, ignore_errors=True)
            partial.rename(folder)
        manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
    return Recorded(scenario, folder, manifest)


# -- committed dumps ------------------------------------------------------------------------


def dump(db: Path) -> str:
    """``sqlite3 .dump`` of the tables the importer reads, in Hermes's own DDL."""
    conn = sqlite3.connect(db)
    try:
        tables = {
            name: sql
            for name, sql in conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY rowid"
            )
        }
        lines = ["PRAGMA foreign_keys=OFF;", "BEGIN TRANSACTION;"]
        for table in DUMPED:
            if table not in tables:
                continue
            lines.append(f"{tables[table]};")
            columns = [row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')]
            values_sql = " || ', ' || ".join(f"quote({_name(c)})" for c in columns)
            for (values,) in conn.execute(
                f'SELECT {values_sql} FROM "{table}" ORDER BY rowid'  # noqa: S608
            ):
                lines.append(f'INSERT INTO "{table}" VALUES({values});')
        if "messages" in tables:
            seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").fetchone()
            if seq:
                lines.append(
                    "INSERT INTO sqlite_sequence (name, seq) "  # noqa: S608 - an integer
                    f"VALUES ('messages', {int(seq[0])});"
                )
        lines.append("COMMIT;")
        return "\n".join(lines) + "\n"
    finally:
        conn.close()


def _name(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'


def load(sql: str, db: Path) -> Path:
    """A ``state.db`` built from a committed dump."""
    db.parent.mkdir(parents=True, exist_ok=True)
    db.unlink(missing_ok=True)
    conn = sqlite3.connect(db)
    try:
        conn.executescript(sql)
    finally:
        conn.close()
    return db


def committed(name: str, into: Path) -> Recorded:
    """A committed recording, its stores rebuilt under ``into``."""
    source = COMMITTED / name
    manifest = json.loads((source / "manifest.json").read_text(encoding="utf-8"))
    for phase in range(1, len(manifest["tips"]) + 1):
        sql = (source / f"phase{phase}.sql").read_text(encoding="utf-8")
        load(sql, into / f"phase{phase}" / "state.db")
    return Recorded(SCENARIOS[name], into, manifest)


def export(folder: Path, name: str) -> None:
    """Write a recording's dumps and manifest into ``tests/data/hermes_homes/<name>/``."""
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    out = COMMITTED / name
    out.mkdir(parents=True, exist_ok=True)
    for phase in range(1, len(manifest["tips"]) + 1):
        text = dump(folder / f"phase{phase}" / "state.db")
        (out / f"phase{phase}.sql").write_text(text, encoding="utf-8")
    shutil.copy(folder / "manifest.json", out / "manifest.json")
    sizes = ", ".join(f"{p.name} {p.stat().st_size // 1024} KB" for p in sorted(out.glob("*.sql")))
    print(f"{name}: {sizes}", file=sys.stderr)


def write_committed(names: list[str]) -> None:
    """Record the scenarios afresh and write their dumps and manifests into the repository."""
    for name in names:
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch) / name
            record(SCENARIOS[name], folder)
            export(folder, name)


def _main(argv: list[str]) -> int:
    names = argv or sorted(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        print(f"unknown scenarios: {', '.join(unknown)} (known: {', '.join(SCENARIOS)})")
        return 2
    write_committed(names)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))


__all__ = [
    "INPLACE",
    "ROTATION",
    "SCENARIOS",
    "Fact",
    "Recorded",
    "Scenario",
    "cached",
    "committed",
    "dump",
    "load",
    "record",
    "text_of",
]
