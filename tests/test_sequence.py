"""The ordered, exactly-once append a mirroring client relies on (``sequence`` on
POST /sessions/{id}/messages): a retry whose answer was lost stores only what is new, a gap is
refused with where to resume, and racing retries of one batch store it once."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from compression.engine.compress import compress
from sessions_app.models import Message, Session
from tests.processes import ROOT, isolated_env, python
from tests.test_api import TOOL_TURN, snapshot
from tests.test_compression import assert_consistent


def said(n: int, padding: str = "") -> list[dict]:
    return [
        {"role": "user", "content": f"question {n}{padding}"},
        {"role": "assistant", "content": f"answer {n}{padding}"},
    ]


def contents(sid: str) -> list[str]:
    return list(
        Message.objects.filter(session_id=sid, role__in=["user", "assistant"])
        .order_by("position")
        .values_list("content", flat=True)
    )


def test_a_sequenced_batch_is_stored_once_and_a_retry_stores_only_what_is_new(gateway):
    sid = gateway.open(system_prompt="sys")["id"]  # the system prompt is not in the count
    assert gateway.get(f"/sessions/{sid}").json()["next_sequence"] == 0

    first = gateway.post(f"/sessions/{sid}/messages", {"messages": said(0), "sequence": 0})
    assert first.status_code == 201
    assert (first.json()["next_sequence"], first.json()["duplicates"]) == (2, 0)

    # The answer was lost; the client sends the same batch again: nothing new, 200.
    before = snapshot(sid)
    again = gateway.post(
        f"/sessions/{sid}/messages",
        {"messages": said(0), "sequence": 0, "usage": {"prompt_tokens": 99_999}},
    )
    assert again.status_code == 200, again.content
    body = again.json()
    assert (body["next_sequence"], body["duplicates"], body["messages"]) == (2, 2, [])
    assert body["session"]["usage"]["last_prompt_tokens"] is None  # a stale batch's usage
    assert snapshot(sid) == before

    # A batch that overlaps what is stored by one message: only the rest is stored.
    overlap = gateway.post(
        f"/sessions/{sid}/messages", {"messages": [said(0)[1], *said(1)], "sequence": 1}
    )
    assert overlap.status_code == 201
    body = overlap.json()
    assert (body["next_sequence"], body["duplicates"]) == (4, 1)
    assert [m["content"] for m in body["messages"]] == ["question 1", "answer 1"]
    assert body["session"]["next_sequence"] == 4
    assert contents(sid) == ["question 0", "answer 0", "question 1", "answer 1"]
    assert gateway.get(f"/sessions/{sid}").json()["next_sequence"] == 4
    assert_consistent(Session.objects.get(pk=sid))


def test_a_gap_is_409_with_the_sequence_to_resume_from_and_stores_nothing(gateway):
    sid = gateway.open(system_prompt="sys")["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": said(0), "sequence": 0})
    before = snapshot(sid)
    response = gateway.post(f"/sessions/{sid}/messages", {"messages": said(2), "sequence": 4})
    assert response.status_code == 409
    body = response.json()
    assert body["expected_sequence"] == body["next_sequence"] == 2
    assert "messages 2 to 3 never arrived" in body["detail"]
    assert snapshot(sid) == before


def test_without_a_sequence_the_append_is_unchecked_and_leaves_the_count_alone(gateway):
    sid = gateway.open()["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": said(0), "sequence": 0})
    plain = gateway.post(f"/sessions/{sid}/messages", {"messages": said(0)})
    assert plain.status_code == 201 and plain.json()["next_sequence"] == 2
    assert contents(sid) == ["question 0", "answer 0"] * 2
    # The count is the client's: unsequenced rows between its batches do not move it.
    assert (
        gateway.post(f"/sessions/{sid}/messages", {"messages": said(1), "sequence": 2}).json()[
            "next_sequence"
        ]
        == 4
    )


def test_a_retry_split_inside_a_tool_call_stores_the_results_after_their_stored_call(gateway):
    sid = gateway.open()["id"]
    gateway.post(f"/sessions/{sid}/messages", {"messages": TOOL_TURN[:2], "sequence": 0})
    # The retry repeats the call; only its result and the reply are new, and they pair with
    # the call stored by the first request.
    response = gateway.post(f"/sessions/{sid}/messages", {"messages": TOOL_TURN, "sequence": 0})
    assert response.status_code == 201, response.content
    assert response.json()["duplicates"] == 2
    assert [m["role"] for m in response.json()["messages"]] == ["tool", "assistant"]
    assert_consistent(Session.objects.get(pk=sid))


def test_bad_sequences_are_422_naming_the_field(gateway):
    sid = gateway.open()["id"]
    for bad in (-1, "0", True, 1.5):
        response = gateway.post(f"/sessions/{sid}/messages", {"messages": said(0), "sequence": bad})
        assert response.status_code == 422, bad
        assert "sequence" in response.json()["detail"]


def test_a_continuation_carries_the_clients_count_on(gateway, hermes_config):
    hermes_config(compression={"in_place": False, "protect_last_n": 2})
    sid = gateway.open(system_prompt="sys")["id"]
    batch = [m for n in range(8) for m in said(n, " and more" * 200)]
    gateway.post(f"/sessions/{sid}/messages", {"messages": batch, "sequence": 0})
    result = compress(Session.objects.get(pk=sid))
    assert result.continued_in is not None
    new = str(result.continued_in.pk)
    assert gateway.get(f"/sessions/{new}").json()["next_sequence"] == 16
    retry = gateway.post(
        f"/sessions/{new}/messages", {"messages": said(7, " and more" * 200), "sequence": 14}
    )
    assert retry.status_code == 200 and retry.json()["duplicates"] == 2


# Racing retries: every process sends the same conversation, batch by batch, each with its
# sequence, as a client does that retries whatever it is not sure arrived -- several copies of
# one batch meet at the session's row lock.
SENDER = """
import django, json, pathlib, sys, time
django.setup()
from sessions_app.models import Session
from sessions_app.services import append_messages
session = Session.objects.get(pk=sys.argv[1])
here = pathlib.Path(sys.argv[2])
(here / f"ready-{sys.argv[3]}").touch()
while not (here / "go").exists():  # every sender starts at once
    time.sleep(0.01)
stored = duplicates = 0
for i in range(30):
    batch = [{"role": "user", "content": f"question {i}"},
             {"role": "assistant", "content": f"answer {i}"}]
    result = append_messages(session, batch, sequence=2 * i)
    stored += len(result.messages)
    duplicates += result.duplicates
print(json.dumps([stored, duplicates]))
"""

CHECK = """
import django, json, sys
django.setup()
from sessions_app.models import Message, Session
from sessions_app.services import recount
session = Session.objects.get(pk=sys.argv[1])
r = recount(session)
rows = list(Message.objects.filter(session=session).order_by("position")
            .values_list("position", "content"))
print(json.dumps({
    "next_sequence": session.next_sequence,
    "counters": [session.live_messages, session.live_tokens, session.total_messages],
    "recount": [r.live_messages, r.live_tokens, r.total_messages],
    "positions": [p for p, _ in rows],
    "contents": [c for _, c in rows],
}))
"""


@pytest.mark.slow
def test_racing_retries_of_the_same_batches_store_each_message_once_in_order(tmp_path):
    with isolated_env(tmp_path, server="  sqlite_busy_timeout_seconds: 30\n") as env:
        setup = (
            "import django; django.setup()\n"
            "from sessions_app.keys import create_channel\n"
            "from sessions_app.services import open_session\n"
            "print(open_session(create_channel('mirror')[0], system_prompt='sys').session.pk)\n"
        )
        sid = python("-c", setup, env=env).strip().splitlines()[-1]
        senders = [
            subprocess.Popen(
                [sys.executable, "-c", SENDER, sid, str(tmp_path), str(n)],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for n in range(4)
        ]
        deadline = time.monotonic() + 120
        while len(list(tmp_path.glob("ready-*"))) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        (tmp_path / "go").touch()
        tallies = []
        for sender in senders:
            out, err = sender.communicate(timeout=300)
            assert sender.returncode == 0, err
            tallies.append(json.loads(out.strip().splitlines()[-1]))
        print("stored, skipped by each sender:", tallies)
        state = json.loads(python("-c", CHECK, sid, env=env).strip().splitlines()[-1])
    assert sum(stored for stored, _ in tallies) == 60  # each message stored by one sender
    assert sum(duplicates for _, duplicates in tallies) == 3 * 60  # the others skipped it
    assert state["next_sequence"] == 60
    assert state["counters"] == state["recount"]
    assert state["positions"] == list(range(61))
    expected = ["sys"] + [f"{kind} {i}" for i in range(30) for kind in ("question", "answer")]
    assert state["contents"] == expected
