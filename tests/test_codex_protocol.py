"""Protocol drift (#20): what our Codex client sends and what our loopback app server
(compression/testing/fake_codex.py) sends, validated against the JSON Schema the pinned real
``codex app-server generate-json-schema`` writes. A field renamed or made required upstream fails
here, not in a user's gateway. Skips without the real peer (bin/peers needs Node.js and npm)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator

from compression.testing.fake_codex import FakeCodex
from tests import codex_peer

pytestmark = pytest.mark.peer  # the real app server's schema

FAKE = [sys.executable, "-m", "compression.testing.fake_codex"]


class CodexSchema:
    """The generated schema files, and which definition each message must match."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.files = {path.stem: path for path in folder.rglob("*.json")}

    def _load(self, name: str) -> dict[str, Any]:
        return json.loads(self.files[name].read_text())

    def _branch(self, union: str, method: str) -> dict[str, Any]:
        """The variant of a ``oneOf`` union (ClientRequest, ServerNotification…) for a method,
        with the union's definitions, so an error names the field, not the whole union."""
        schema = self._load(union)
        for variant in schema["oneOf"]:
            if method in variant["properties"]["method"].get("enum", []):
                return {**variant, "definitions": schema.get("definitions", {})}
        raise AssertionError(f"{union} has no method {method!r}: renamed or removed upstream?")

    def response_for(self, method: str) -> dict[str, Any]:
        params = self._branch("ClientRequest", method)["properties"]["params"]["$ref"]
        name = params.rsplit("/", 1)[1].removesuffix("Params") + "Response"
        assert name in self.files, f"no {name}.json for {method}"
        return self._load(name)

    def check(self, schema: dict[str, Any], message: dict[str, Any], what: str) -> None:
        errors = sorted(Draft7Validator(schema).iter_errors(message), key=lambda e: list(e.path))
        assert not errors, f"{what} does not match Codex {codex_peer.PINNED}:\n" + "\n".join(
            f"  at {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
            for e in errors[:10]
        )

    def client_message(self, message: dict[str, Any]) -> None:
        method = message["method"]
        union = "ClientRequest" if "id" in message else "ClientNotification"
        self.check(self._branch(union, method), message, f"our {method} {union}")

    def server_message(self, message: dict[str, Any], methods: dict[Any, str]) -> None:
        if "method" in message:
            union = "ServerNotification"
            self.check(self._branch(union, message["method"]), message, message["method"])
        elif "error" in message:
            self.check(self._load("JSONRPCError"), message, "an error response")
        else:
            method = methods[message["id"]]
            schema = self.response_for(method)
            self.check(schema, message["result"], f"the result of {method}")


@pytest.fixture(scope="session")
def codex_schema(tmp_path_factory) -> CodexSchema:
    reason = codex_peer.missing()
    if reason:
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("codex-schema")
    home = tmp_path_factory.mktemp("codex-home")
    subprocess.run(
        [str(codex_peer.CODEX), "app-server", "generate-json-schema", "--out", str(folder)],
        check=True,
        capture_output=True,
        timeout=120,
        env=codex_peer.environment(home),
    )
    return CodexSchema(folder)


@pytest.fixture
def sent_by_our_client(gateway, hermes_config, tmp_path, monkeypatch):
    """Runs our client's compaction against the fake (stdio, then WebSocket); what it sent."""
    from compression.testing.fake_codex import websocket_server

    log = tmp_path / "codex.jsonl"
    monkeypatch.setenv("FAKE_CODEX_LOG", str(log))
    settings = {"codex_app_server_auto": "managed", "codex_app_server_timeout_seconds": 20}
    hermes_config(compression={**settings, "codex_app_server_command": FAKE})
    sid = gateway.open(system_prompt="sys", codex_thread_id="thr_42")["id"]
    assert gateway.post(f"/sessions/{sid}/compress", {"wait": True}).json()["outcome"] == (
        "compressed"
    )
    with websocket_server() as url:
        hermes_config(compression={**settings, "codex_app_server_url": url})
        response = gateway.post(f"/sessions/{sid}/compress", {"wait": True})
        assert response.json()["outcome"] == "compressed"
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_every_message_our_client_sends_matches_the_real_app_servers_schema(
    codex_schema, sent_by_our_client
):
    methods = [message["method"] for message in sent_by_our_client]
    assert methods == ["initialize", "initialized", "thread/resume", "thread/compact/start"] * 2
    for message in sent_by_our_client:
        codex_schema.client_message(message)


@pytest.mark.parametrize("mode", ["ok", "legacy", "error", "silent"])
def test_every_message_the_fake_app_server_sends_matches_the_real_schema(
    codex_schema, sent_by_our_client, mode
):
    fake = FakeCodex(mode)
    methods: dict[Any, str] = {}
    answered = []
    for message in sent_by_our_client[:4]:
        if "id" in message:
            methods[message["id"]] = message["method"]
        answered += fake.handle(message)
    assert answered, "the fake answered nothing"
    for message in answered:
        codex_schema.server_message(message, methods)
    kinds = {m.get("method") for m in answered}
    if mode == "ok":
        assert {"turn/started", "item/started", "item/completed", "turn/completed"} <= kinds
    if mode == "legacy":
        assert "thread/compacted" in kinds


def test_the_fakes_refusals_are_well_formed_errors(codex_schema):
    fake = FakeCodex("ok")
    before_initialize = fake.handle({"id": 1, "method": "thread/resume", "params": {}})
    fake.handle({"id": 2, "method": "initialize", "params": {"clientInfo": {}}})
    unknown = fake.handle({"id": 3, "method": "thread/nonsense", "params": {}})
    missing_thread = fake.handle({"id": 4, "method": "thread/resume", "params": {"threadId": "x"}})
    for message in [*before_initialize, *unknown, *missing_thread]:
        codex_schema.server_message(message, {})
