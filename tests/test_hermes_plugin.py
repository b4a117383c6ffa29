"""The Hermes plugin in the real Hermes Agent 0.19.0, against the service as deployed.

The plugin is pip-installed into Hermes's own virtualenv once per test session (as its README
says); the service runs as ``manage.py serve`` on a database of its own; one loopback model
plays both Hermes's chat model and the service's summariser (``PluginAgent``). Hermes is driven
through its gateway's API server (one long-lived process, about a second a turn) with its
compaction in place (0.19.0's default), through ``hermes chat -q --resume`` and with rotation,
and over ACP."""

from __future__ import annotations

import json
import re
import time

import pytest

from compression.testing.fake_model import Fail, FakeModelServer, Respond
from tests.hermes_peer import (
    HermesACP,
    HermesGateway,
    HermesHome,
    HermesTUI,
    needs_hermes,
    text_of,
)
from tests.plugin_support import PLUGIN_SITE, LiveService, PluginAgent, install_plugin
from tests.processes import isolated_env

pytestmark = [needs_hermes, pytest.mark.peer]
MARKER = re.compile(r"\[Originals (#\d+-#\d+) are kept")
# The service decides: it compresses once the reported prompt passes 50,000 tokens; the loopback
# model reports 1,000 tokens a message, so the 50th message of the live context trips it.
SERVICE_CONFIG = (
    "compression:\n  threshold_tokens: 50000\n  protect_first_n: 3\n  protect_last_n: 10\n"
)
TOKENS_PER_MESSAGE = 1_000
# A memory provider of Hermes's own kind ($HERMES_HOME/plugins/<name>/, memory.provider): what it
# returns before a compression is Hermes's memory_context.
MEMORY_PROVIDER = """
from agent.memory_provider import MemoryProvider


class FactMemory(MemoryProvider):
    name = "factmemory"

    def is_available(self):
        return True

    def initialize(self, session_id, **kwargs):
        pass

    def get_tool_schemas(self):
        return []

    def on_pre_compress(self, messages):
        return "Known from memory: the user's cat is named Biscuit-77."
"""
FILLER = " ".join(f"inventory line {i} is checked and shelved" for i in range(30))


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    """The service and the loopback model, once for the module (each test has conversations
    of its own): starting ``manage.py serve`` takes about ten seconds."""
    reason = install_plugin()
    if reason:
        pytest.skip(reason)
    with FakeModelServer() as model:
        sections = (
            f"auxiliary:\n  compression:\n    model: loopback-summary\n"
            f"    base_url: {model.base_url}\n{SERVICE_CONFIG}"
        )
        with isolated_env(tmp_path_factory.mktemp("service"), sections=sections) as env:
            service = LiveService(env)
            service.start()
            try:
                yield service, model
            finally:
                service.stop()


@pytest.fixture
def live(deployed):
    """The service (started again if a test left it stopped) and a fresh model script."""
    service, model = deployed
    if not service.running:
        service.start()
    agent = PluginAgent(prompt_tokens=lambda body: TOKENS_PER_MESSAGE * len(body["messages"]))
    model.script.default = agent.behaviour()
    return service, model, agent


def home_for(
    tmp_path, service: LiveService, model: FakeModelServer, *, in_place: bool = False, **memory
) -> HermesHome:
    return HermesHome(
        tmp_path / "home",
        model.base_url,
        python_path=[PLUGIN_SITE],
        config={
            "plugins": {"enabled": ["hermes-memory"]},
            "context": {"engine": "hermes-memory"},
            "compression": {"in_place": in_place},
            "hermes_memory": {
                "url": service.url,
                "key": "${HERMES_MEMORY_KEY}",
                "timeout_seconds": 2,
                "retry_seconds": 1,
                **memory,
            },
        },
    )


def script(n: int) -> str:
    """The user's n-th message: a fact, and every third turn a shell command."""
    if n % 3 == 1:
        return f"fact {n}: the colour is C{n}; run `echo step-{n}`"
    return f"fact {n}: the colour is C{n}."


def service_session(service: LiveService, external_id: str) -> dict:
    status, found = service.get(f"/sessions?external_id={external_id}")
    assert status == 200 and len(found) == 1, found
    status, session = service.get(f"/sessions/{found[0]['id']}")
    return session


def test_forty_turns_with_tools_are_mirrored_once_compressed_by_the_service_and_recalled(
    tmp_path, live
):
    service, model, agent = live
    home = home_for(tmp_path, service, model, in_place=True)  # 0.19.0's default
    sent: list[str] = []
    timings: list[tuple[int, float, bool]] = []
    recalled_at = None
    down = range(24, 34)  # the service is stopped for these ten turns
    with HermesGateway(home, extra_env={"HERMES_MEMORY_KEY": service.key}) as gateway:
        first = None
        for n in range(40):
            if n == down.start:
                service.stop()
            if n == down.stop:
                service.start()
            message = script(n)
            if n == 0:
                message = "Remember the vault code 4417, then run `echo vault-4417`"
            elif (
                recalled_at is None
                and n not in down
                and service_session(service, first)["counters"]["compressions"] >= 1
            ):
                message, recalled_at = "recall `vault code`", n
            started = time.monotonic()
            turn = gateway.turn(message)
            timings.append((n, time.monotonic() - started, n in down))
            first = first or turn.session_id
            sent.append(message)
        # The last turns ran while the spool went out; one more mirror point makes sure.
        gateway.turn("that is all for now")
        sent.append("that is all for now")

    session = service_session(service, first)
    rows = service.rows(session["id"])
    originals = [
        r
        for r in rows
        if not r.get("is_summary") and r["kind"] != "notice" and r["role"] != "system"
    ]

    # Every message once, in order: the user's as typed, each tool call and its result, each
    # reply; and the service's own count of sequenced messages says the same.
    assert [r["content"] for r in originals if r["role"] == "user"] == sent
    calls = [r["tool_call_id"] for r in originals if r["role"] == "tool"]
    assert len(calls) == len(set(calls)) == sum(("run `" in m or "recall `" in m) for m in sent)
    assert len([r for r in originals if r["role"] == "assistant"]) == len(sent) + len(calls)
    assert session["next_sequence"] == len(originals)
    # Hermes's background review (a fork that shares the session id) ran, and none of it was
    # mirrored: it is not the conversation.
    review = "Review the conversation above"
    assert any(review in text_of(m) for r in agent.requests for m in r["messages"])
    assert not any(review in (r["content"] or "") for r in rows)
    # The service decided every compression ("due"), the plugin ran it as the service's own
    # automatic one, and Hermes's own summariser was never asked.
    log = (home.path / "logs" / "agent.log").read_text(encoding="utf-8")
    assert session["counters"]["compressions"] >= 2
    automatic = r"automatic compression of service session \S+: 200 compressed"
    assert len(re.findall(automatic, log)) >= 2
    assert agent.summary_requests == [] and len(agent.service_summaries) >= 2

    # After each compression the model saw Hermes's system prompt, the head, the service's
    # summary with its markers, then the tail.
    compressed = [
        r for r in agent.requests if any(MARKER.search(text_of(m)) for m in r["messages"])
    ]
    assert compressed
    firsts = {}
    for request in compressed:
        messages = request["messages"]
        summary = next(i for i, m in enumerate(messages) if MARKER.search(text_of(m)))
        firsts.setdefault(MARKER.search(text_of(messages[summary])).group(1), request)
        assert messages[0]["role"] == "system" and "Hermes Agent" in text_of(messages[0])
        assert text_of(messages[1]).startswith("Remember the vault code 4417")
        assert 1 < summary <= 4  # the head: the protected first messages
        # The summary sends the model to the plugin's recall tool, not to Hermes's own.
        assert "are kept: memory_recall finds them.]" in text_of(messages[summary])
        assert len(messages) - summary - 1 >= 1  # the tail follows
    assert len(firsts) >= 2  # a new summary after each compression

    # The model's recall of an archived turn found the original.
    assert recalled_at is not None
    asked = next(
        r
        for r in agent.requests
        if r["messages"][-1].get("role") == "tool"
        and text_of(r["messages"][-2]) == ""
        and "recall_" in json.dumps(r["messages"][-2].get("tool_calls"))
    )
    found = text_of(asked["messages"][-1])
    assert "Remember the vault code 4417" in found and "archived" in found

    # While the service was down no turn waited for it.
    assert max(seconds for _, seconds, away in timings if away) < 10, timings
    assert log.count("messages wait in the spool") == 1


def test_compact_over_acp_compresses_in_the_service_with_hermes_memory_context(tmp_path, live):
    service, model, agent = live
    home = home_for(tmp_path, service, model)
    provider = home.path / "plugins" / "factmemory"
    provider.mkdir(parents=True)
    (provider / "__init__.py").write_text(MEMORY_PROVIDER, encoding="utf-8")
    home.configure({"memory": {"provider": "factmemory"}})
    with HermesACP(home, extra_env={"HERMES_MEMORY_KEY": service.key}) as hermes:
        hermes.new_session()
        for n in range(8):
            hermes.prompt(f"step {n}: {FILLER}; run `echo step-{n}-done`")
        before = len(agent.requests)
        compacted = hermes.compact()
        after = hermes.prompt("and what now?")
    assert compacted.text.startswith("Context compressed:"), compacted.text
    assert after.text.startswith("Noted:")

    (conversation,) = [p.name for p in (home.path / "hermes-memory" / "conversations").iterdir()]
    session = service_session(service, conversation)
    assert session["counters"]["compressions"] == 1
    assert agent.summary_requests == [] and len(agent.service_summaries) == 1
    # Hermes's memory provider reached the service's summary prompt.
    assert "Biscuit-77" in text_of(agent.service_summaries[0]["messages"][-1])
    # The next request to the model carried the service's summary between head and tail.
    (next_request,) = agent.requests[before:]
    texts = [text_of(m) for m in next_request["messages"]]
    assert texts[1].startswith("step 0:")
    assert any(MARKER.search(t) for t in texts[2:5])
    assert texts[-1] == "and what now?"


def test_a_context_overflow_hermes_hits_is_reported_and_the_service_compresses_at_once(
    tmp_path, live
):
    service, model, agent = live
    home = home_for(tmp_path, service, model)
    overflow = {
        "message": "This model's maximum context length is 200000 tokens. However, your "
        "messages resulted in 231000 tokens. Please reduce the length of the messages.",
        "code": "context_length_exceeded",
        "type": "invalid_request_error",
    }
    failed: list[dict] = []

    def answer(body):
        if "the big one" in text_of((body or {}).get("messages", [{}])[-1]) and not failed:
            failed.append(body)
            return Fail(400, overflow["message"], overflow["code"], overflow["type"])
        return agent.answer(body)

    model.script.default = Respond(answer)
    with HermesGateway(home, extra_env={"HERMES_MEMORY_KEY": service.key}) as gateway:
        first = gateway.turn(f"step 0: {FILLER}; run `echo step-0-done`")
        for n in range(1, 8):
            gateway.turn(f"step {n}: {FILLER}")
        done = gateway.turn("the big one: what did we shelve?")
    assert done.reply.startswith("Noted:") and failed

    session = service_session(service, first.session_id)
    assert session["counters"]["compressions"] == 1
    assert agent.summary_requests == [] and len(agent.service_summaries) == 1
    # The service heard the model's error and compressed; Hermes retried with its summary.
    log = (home.path / "logs" / "agent.log").read_text(encoding="utf-8")
    assert "model error 400 reported: 200 compressed" in log
    retried = agent.requests[-1]
    assert len(retried["messages"]) < len(failed[0]["messages"])
    assert any(MARKER.search(text_of(m)) for m in retried["messages"])


def test_each_hermes_chat_process_goes_on_where_the_last_one_stopped_across_a_rotation(
    tmp_path, live
):
    """``hermes chat -q --resume``: a new process each turn, so all the plugin knows is on
    disk; the service's compression rotates Hermes's session id and the next process, resuming
    the new id, continues the same service session."""
    service, model, agent = live
    home = home_for(tmp_path, service, model)
    big = {"after": False}
    agent.prompt_tokens = lambda body: 60_000 if big["after"] else 2_000
    env = {"HERMES_MEMORY_KEY": service.key}
    sent, ids, session_id = [], [], None
    for n in range(7):
        big["after"] = n == 4  # the reported prompt passes the service's threshold once
        message = f"step {n}: {FILLER}; run `echo step-{n}`" if n < 5 else f"step {n}: go on"
        turn = home.chat(message, resume=session_id, extra_env=env)
        session_id = turn.session_id
        sent.append(message)
        ids.append(session_id)

    assert ids[0] == ids[4] != ids[5] == ids[6]  # Hermes rotated its id at the compression
    session = service_session(service, ids[0])
    assert session["counters"]["compressions"] == 1
    rows = [r for r in service.rows(session["id"]) if not r.get("is_summary")]
    assert [r["content"] for r in rows if r["role"] == "user"] == sent
    assert session["next_sequence"] == len([r for r in rows if r["role"] != "system"])
    after = next(r for r in agent.requests if text_of(r["messages"][-1]).startswith("step 5"))
    assert any(MARKER.search(text_of(m)) for m in after["messages"])


def test_compress_with_a_focus_from_hermes_tui_is_a_manual_compression_with_that_focus(
    tmp_path, live
):
    service, model, agent = live
    home = home_for(tmp_path, service, model, in_place=True)
    with HermesTUI(home, extra_env={"HERMES_MEMORY_KEY": service.key}) as tui:
        tui.create_session()
        for n in range(8):
            tui.prompt(f"step {n}: {FILLER}; run `echo step-{n}-done`")
        result = tui.compress("the shelving of line 7")
        before = len(agent.requests)
        tui.prompt("and what now?")
    assert result.get("status") != "error", result
    session = service_session(service, tui.stored_session_id)
    assert session["counters"]["compressions"] == 1
    (summary,) = agent.service_summaries
    assert "Focus: keep the most detail about: the shelving of line 7" in text_of(
        summary["messages"][-1]
    )
    (next_request,) = agent.requests[before:]
    assert any(MARKER.search(text_of(m)) for m in next_request["messages"])
