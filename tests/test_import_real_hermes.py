"""import_hermes on homes the real Hermes Agent 0.19.0 wrote (tests/hermes_homes.py): in-place
compaction and a rotation chain, each compacted three times, then continued after a first import
and compacted once more. Hermes's copies are not verbatim (its head's long tool output pruned,
typed blanks stripped, a pasted memory-context block cleaned), yet every planted fact shows
exactly once after the first import and after the incremental one.

Each test runs on the homes recorded afresh by the real Hermes where it is installed (once per
parameter set, kept under var/hermes_homes/) and on the recorded homes committed under
tests/data/hermes_homes/ everywhere."""

from __future__ import annotations

import itertools
import json
import shutil
import sqlite3
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from compression.pages.charts import live_tokens_series
from hermes_import.format import decode_content, replay_text
from hermes_import.mapping import Planned
from hermes_import.models import ImportedSession
from hermes_import.provenance import repeats
from search.filters import Filters
from search.service import search
from sessions_app.models import Message, Session
from sessions_app.selectors.context import live_context
from tests.hermes_homes import SCENARIOS, Recorded, cached, committed
from tests.hermes_peer import missing

pytestmark = pytest.mark.django_db(transaction=True)

SOURCES = ("recorded", "committed")


@pytest.fixture(
    params=[
        pytest.param((s, n), id=f"{s}-{n}", marks=[pytest.mark.peer] if s == "recorded" else [])
        for n in sorted(SCENARIOS)
        for s in SOURCES
    ]
)
def home(request, tmp_path) -> Recorded:
    source, name = request.param
    if source == "recorded":
        if missing():
            pytest.skip(missing())
        return cached(SCENARIOS[name])
    return committed(name, tmp_path / "committed")


def _import(recorded: Recorded, phase: int, at: Path) -> str:
    """Import the store as Hermes left it after ``phase``, always from the same path (a re-run
    knows a store by its path when Hermes wrote no id into it)."""
    at.mkdir(parents=True, exist_ok=True)
    shutil.copy(recorded.state_db(phase), at / "state.db")
    out = StringIO()
    call_command("import_hermes", str(at), stdout=out, stderr=StringIO())
    return out.getvalue()


def _hits(word: str) -> list[Message]:
    return [hit.message for hit in search(word, Filters()).hits]


def _hermes_context(db: Path, sid: str) -> list[dict]:
    """What Hermes holds live for ``sid``: its stored prompt, then its active rows as stored."""
    conn = sqlite3.connect(db)
    try:
        prompt = conn.execute("SELECT system_prompt FROM sessions WHERE id = ?", (sid,)).fetchone()
        out = [{"role": "system", "content": prompt[0]}] if prompt and prompt[0] else []
        for role, content, calls, call_id in conn.execute(
            "SELECT role, content, tool_calls, tool_call_id FROM messages "
            "WHERE session_id = ? AND active = 1 ORDER BY id",
            (sid,),
        ):
            text, parts = decode_content(content)
            message = {"role": role, "content": parts if parts is not None else text}
            if calls:
                message["tool_calls"] = json.loads(calls)
            if call_id:
                message["tool_call_id"] = call_id
            out.append(message)
        return out
    finally:
        conn.close()


def _tag(recorded: Recorded) -> str:
    """The scenario's prefix of its planted words (``zqiheaduser`` -> ``zqi``)."""
    return recorded.scenario.facts[0].word.removesuffix("headuser")


def _check_facts(recorded: Recorded, phase: int) -> None:
    for fact in recorded.facts(phase):
        hits = _hits(fact.word)
        assert len(hits) == 1, (fact, [(m.position, m.kind, m.content[:60]) for m in hits])


def test_every_planted_fact_shows_once_after_a_first_import_and_after_an_incremental_one(
    home, tmp_path
):
    report = _import(home, 1, tmp_path / "home")
    _check_facts(home, 1)
    assert "Copies not matched: 0" in report, report
    tip = home.manifest["tips"][0]
    session = ImportedSession.objects.get(hermes_id=tip).session
    assert live_context(session) == _hermes_context(home.state_db(1), tip)

    report = _import(home, 2, tmp_path / "home")
    _check_facts(home, 2)
    assert "0 new, 1 updated" in report and "Copies not matched: 0" in report, report
    tip = home.manifest["tips"][1]
    assert Session.objects.count() == 1
    session = Session.objects.get()
    assert session.external_id == tip
    assert live_context(session) == _hermes_context(home.state_db(2), tip)
    assert session.compressions == sum(home.manifest["compactions"])
    hermes_ids = list(
        session.messages.exclude(origin__id=None).values_list("origin__id", flat=True)
    )
    assert len(hermes_ids) == len(set(hermes_ids))
    links = sum(home.manifest["compactions"]) + 1 if not home.scenario.in_place else 1
    assert session.hermes_links.count() == links


def test_every_copy_hermes_wrote_is_tied_to_its_original_and_no_summary_covers_its_head(
    home, tmp_path
):
    _import(home, 1, tmp_path / "home")
    _import(home, 2, tmp_path / "home")
    session = Session.objects.get()
    rows = list(session.messages.order_by("position"))
    by_pk = {m.pk: m for m in rows}
    summaries = [m for m in rows if m.is_summary]
    assert len(summaries) == sum(home.manifest["compactions"])
    # Hermes kept its head (three messages) in every compaction: each summary is preceded by
    # three copies, the last two generations' of the same first three messages.
    for summary in summaries:
        head = rows[rows.index(summary) - 3 : rows.index(summary)]
        assert all(m.continues_id for m in head), [(m.position, m.content) for m in head]
        root = by_pk[head[0].continues_id]
        while root.continues_id:
            root = by_pk[root.continues_id]
        assert root.position == 1  # the first message after the system prompt
        replaced = [m for m in rows if m.summarized_by_id == summary.pk]
        assert replaced and max(m.position for m in replaced) < head[0].position
        assert summary.covers_to_position < head[0].position
    # A copy is Hermes's copy of its original: the text as Hermes replays it, or the same call.
    for copy in (m for m in rows if m.continues_id and not m.is_summary):
        original = by_pk[copy.continues_id]
        assert copy.role == original.role
        if copy.role == "tool":
            assert copy.tool_call_id == original.tool_call_id
        else:
            assert replay_text(copy.content) == replay_text(original.content)
    # The head's long tool output is pruned in every copy; only the original holds its word.
    original = rows[3]  # after the system prompt: the user's message, the call, its result
    assert original.role == "tool" and original.continues_id is None
    assert _hits(_tag(home) + "headtool") == [original]
    live_tool = next(m for m in rows if m.active and m.role == "tool")
    assert live_tool.content.startswith("[terminal] ran `") and live_tool.continues_id


def test_what_hermes_sent_is_kept_in_the_copy_s_origin_and_blanks_typed_are_the_original_s(
    home, tmp_path
):
    _import(home, 2, tmp_path / "home")
    tag = _tag(home)
    original = Message.objects.get(content__contains=f"{tag}recalled")
    assert original.content.startswith("<memory-context>")
    copies = list(Message.objects.filter(content=f"and the fact {tag}memctx"))
    assert copies and all(m.continues_id for m in copies)
    assert all(m.origin["api_content"] == original.content for m in copies)
    assert "api_content" not in original.origin  # Hermes stored what it sent as the content
    padded = Message.objects.get(content__contains=f"{tag}padded", continues=None)
    assert padded.content != padded.content.strip()
    assert {m.content for m in padded.continued_by.all()} == {padded.content.strip()}


def test_imported_rows_carry_their_tokens_and_the_chart_falls_at_each_compaction(home, tmp_path):
    _import(home, 1, tmp_path / "home")
    _import(home, 2, tmp_path / "home")
    session = Session.objects.get()
    archived = session.messages.filter(active=False, compressed=True)
    assert archived.exists() and not archived.filter(token_count=0).exclude(content="").exists()
    assert not session.messages.filter(token_count=0).exclude(content="").exists()
    # Archived when their compaction happened, which is when their copies were written.
    for row in archived.exclude(summarized_by=None).select_related("summarized_by"):
        assert row.archived_at == row.summarized_by.created_at
    # The live tokens over time, after all that happened at each moment: they fall at the
    # first compaction (the long reply summarised away) and end at the session's live tokens.
    series = [
        (when, list(points)[-1][1])
        for when, points in itertools.groupby(live_tokens_series(session), key=lambda p: p[0])
    ]
    assert series[-1][1] == session.live_tokens
    first = min(m.created_at for m in session.messages.filter(is_summary=True))
    before = [v for when, v in series if when < first][-1]
    at = next(v for when, v in series if when == first)
    assert at < before - 5_000
    assert max(v for _, v in series) > session.live_tokens


def test_a_copy_that_does_not_repeat_its_original_is_named_and_the_others_still_match(tmp_path):
    recorded = committed("inplace", tmp_path / "committed")
    db = recorded.state_db(1)
    conn = sqlite3.connect(db)
    # Hermes's second compaction carried "remember ... padded ..." in its tail; change the copy.
    (copy_id,) = conn.execute(
        "SELECT max(id) FROM messages WHERE content LIKE 'remember %padded%'"
    ).fetchone()
    conn.execute("UPDATE messages SET content = 'edited by hand' WHERE id = ?", (copy_id,))
    conn.commit()
    conn.close()
    report = _import(recorded, 1, tmp_path / "home")
    assert "Copies not matched: 1" in report
    assert f"message {copy_id}: in the tail" in report
    edited = Message.objects.get(origin__id=copy_id)
    assert edited.continues_id is None
    # Its neighbours in the same tail are still tied to theirs.
    before = Message.objects.get(session=edited.session, position=edited.position - 1)
    after = Message.objects.get(session=edited.session, position=edited.position + 1)
    assert before.continues_id and after.continues_id


PRUNE = r"""
import json, sys
from agent.context_compressor import ContextCompressor

long = "\n".join(f"line {n} of the output" for n in range(40))
calls = {
    "terminal": {"command": "make test"},
    "read_file": {"path": "src/app.py", "offset": 3},
    "search_files": {"pattern": "TODO", "path": "src"},
    "web_search": {"query": "hermes agent"},
    "execute_code": {"code": "print(1)"},
    "patch": {"path": "a.py", "mode": "replace"},
    "mcp_github_list_issues": {"repo": "x/y"},
}
messages = [{"role": "user", "content": "go"}]
for n, (name, args) in enumerate(calls.items()):
    call = {"id": f"call_{n}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)}}
    messages += [{"role": "assistant", "content": "", "tool_calls": [call]},
                 {"role": "tool", "tool_call_id": f"call_{n}", "content": f"{name} {long}"}]
# The same output twice: Hermes keeps the newest and points the older one at it.
again = {"id": "call_again", "type": "function",
         "function": {"name": "terminal", "arguments": json.dumps({"command": "cat a"})}}
messages += [{"role": "assistant", "content": "", "tool_calls": [again]},
             {"role": "tool", "tool_call_id": "call_again", "content": f"again {long}"},
             {"role": "user", "content": "once more"},
             {"role": "tool", "tool_call_id": "call_again", "content": f"again {long}"}]
pruned, _ = ContextCompressor._prune_old_tool_results(None, messages, protect_tail_count=1)
print(json.dumps([m["content"] for m in pruned if m["role"] == "tool"][:-1]))
"""


@pytest.mark.peer
@pytest.mark.skipif(missing() is not None, reason=missing() or "")
def test_every_form_hermes_prunes_a_tool_result_to_is_recognised_as_its_copy(tmp_path):
    """Hermes's own pruning (its _prune_old_tool_results, run in its virtualenv) on outputs of
    its tools and of a plugin's: each shortened result is accepted as the original's copy."""
    import subprocess

    from hermes_import.format import is_pruned_tool_text
    from tests.hermes_peer import HERMES_PYTHON

    # Not from the repository: ``python -c`` puts its directory first on the path, and this
    # service's own top-level package ``agent`` would hide Hermes's.
    done = subprocess.run(
        [str(HERMES_PYTHON), "-c", PRUNE],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        cwd=tmp_path,
    )
    forms = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(forms) == 8 and len(set(forms)) == 8, forms
    assert forms[0].startswith("[terminal] ran `make test` -> exit")
    assert forms[-1].startswith("[Duplicate tool output")
    assert all(is_pruned_tool_text(form) for form in forms), forms


def _row(role: str, text: str | None = None, **fields) -> Planned:
    values = {"tool_calls": None, "tool_call_id": None, "timestamp": None, **fields}
    return Planned(0, "s", role, text, None, kind="live", summary=False, origin={}, **values)


def _call(call_id: str, arguments: str = "{}") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": "t", "arguments": arguments}}


@pytest.mark.parametrize(
    ("copy", "original", "repeats_it"),
    [
        (_row("user", "ask"), _row("user", "  ask \n"), True),
        (
            _row("user", "and the fact"),
            _row("user", "<memory-context>recalled</memory-context> and the fact"),
            True,
        ),
        (_row("user", "ask"), _row("user", "another ask"), False),
        (_row("user", "ask"), _row("assistant", "ask"), False),
        (
            _row("tool", "[terminal] ran `ls` -> exit 0, 3 lines output", tool_call_id="c1"),
            _row("tool", "a\nb\nc", tool_call_id="c1"),
            True,
        ),
        (
            _row("tool", "other output", tool_call_id="c1"),
            _row("tool", "out", tool_call_id="c1"),
            False,
        ),
        (_row("tool", "out", tool_call_id="c2"), _row("tool", "out", tool_call_id="c1"), False),
        (
            _row("assistant", "", tool_calls=[_call("c1", '{"a": "…"}')]),
            _row("assistant", "", tool_calls=[_call("c1", '{"a": "' + "x" * 900 + '"}')]),
            True,
        ),
        (
            _row("assistant", "", tool_calls=[_call("c1")]),
            _row("assistant", "", tool_calls=[_call("c1"), _call("c2")]),
            True,
        ),
        (
            _row("assistant", "(tool call removed)"),
            _row("assistant", "", tool_calls=[_call("c1")]),
            True,
        ),
        (
            _row("assistant", "", tool_calls=[_call("c3")]),
            _row("assistant", "", tool_calls=[_call("c1")]),
            False,
        ),
    ],
)
def test_a_copy_is_recognised_as_hermes_writes_it_and_nothing_else(copy, original, repeats_it):
    assert repeats(copy, original) is repeats_it
