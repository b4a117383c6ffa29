"""The service as deployed (``manage.py serve``: gunicorn and a django-q2 worker) on one
database (a SQLite file with the ORM broker, or PostgreSQL with Redis in the PostgreSQL pass), a
loopback summary model, and a gateway speaking HTTP. Nothing is faked in-process."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from compression.testing.fake_model import FakeModelServer, Reply
from tests.processes import ROOT, isolated_env, python, stop_all, wait_for

pytestmark = pytest.mark.slow  # real processes: servers, workers, copies


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _call(method: str, url: str, key: str, body: dict | None = None, timeout: float = 60):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)  # noqa: S310 - loopback
    request.add_header("Authorization", f"Bearer {key}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - loopback
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture
def service(tmp_path, request):
    """The service under the default web server, or the one a test names (indirect)."""
    web_server = getattr(request, "param", "granian")
    with FakeModelServer() as model:
        model.script.default = Reply("## Goal\nSummarised by the loopback model.")
        sections = (
            f"auxiliary:\n  compression:\n    model: fake-summary\n    base_url: {model.base_url}\n"
        )
        server = f"  web_server: {web_server}\n"
        with isolated_env(tmp_path, server=server, sections=sections) as env:
            yield from _processes(env, model)


def _processes(env: dict[str, str], model: FakeModelServer):
    manage = [sys.executable, "manage.py"]
    out = python("manage.py", "create_channel", "live", env=env, timeout=60)
    key = out.split("store it now): ")[1].strip()
    port = _free_port()
    # What the README runs: manage.py serve (the web server and the worker under one parent).
    processes = [
        subprocess.Popen(
            [*manage, "serve", "--no-migrate"],
            cwd=ROOT,
            env={**env, "HERMES_ADDR": f"127.0.0.1:{port}"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
    ]
    base = f"http://127.0.0.1:{port}/api/v1"
    try:
        wait_for(lambda: _call("GET", f"{base}/sessions", key, timeout=5)[0] == 200, "the web", 120)
        yield base, key, model
    finally:
        stop_all(processes)


def test_a_gateway_compresses_through_the_real_worker_and_finds_the_originals(service):
    base, key, model = service
    status, session = _call(
        "POST", f"{base}/sessions", key, {"model": "gpt-4o", "system_prompt": "sys"}
    )
    assert status == 201
    sid = session["id"]
    messages = []
    for n in range(15):
        messages += [
            {"role": "user", "content": f"需要检查 server-{n} 的缓存配置"},
            {"role": "assistant", "content": f"server-{n} checked: the cache TTL is {n * 10}s."},
        ]
    assert _call("POST", f"{base}/sessions/{sid}/messages", key, {"messages": messages})[0] == 201

    status, result = _call(
        "POST",
        f"{base}/sessions/{sid}/compress",
        key,
        {"wait": True, "wait_seconds": 60},
        timeout=90,
    )
    assert status == 200, result
    assert result["outcome"] == "compressed"
    assert model.requests and "max_tokens" not in model.requests[0].body

    status, context = _call("GET", f"{base}/sessions/{sid}/context", key)
    summary = context["messages"][4]["content"]
    assert "Summarised by the loopback model." in summary
    status, found = _call("GET", f"{base}/search?q=server-3", key)
    kinds = {hit["message"]["kind"] for hit in found["hits"]}
    assert "archived" in kinds
    status, cjk = _call("GET", f"{base}/search?q=%E7%BC%93%E5%AD%98", key)  # 缓存
    assert cjk["index"] == "bigram" and cjk["hits"]


def _raw(base: str, data: bytes) -> tuple[bytes, bytes]:
    """Send ``data`` as it is; the head and the body of the answer (the server closes after)."""
    host, port = urllib.parse.urlsplit(base).netloc.split(":")
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        conn.sendall(data)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    head, _, payload = answer.partition(b"\r\n\r\n")
    return head, payload


@pytest.mark.parametrize("service", ["gunicorn"], indirect=True)
def test_what_gunicorn_refuses_before_django_is_answered_as_json(service):
    """A search too long for gunicorn's request line, a request line that is not HTTP and a
    Host this service does not answer to, sent to the real web server: each a JSON answer a
    client can show."""
    base, key, _ = service
    q = urllib.parse.quote("缓存失效" * 250)  # 1,000 CJK characters: 9,000 bytes encoded
    status, body = _call("GET", f"{base}/search?q={q}", key)
    assert status == 414
    assert "POST /api/v1/search" in body["detail"]
    status, body = _call("POST", f"{base}/search", key, {"q": "缓存失效" * 250})
    assert status == 200 and len(body["query"]) == 1_000
    # The longest GET gunicorn takes still carries every ASCII query the API allows.
    status, body = _call("GET", f"{base}/search?q={'x' * 1_000}", key)
    assert status == 200, body

    head, payload = _raw(base, b"NOT AN HTTP REQUEST\r\n\r\n")
    assert head.split(b" ")[1] == b"400", head
    assert b"content-type: application/json" in head.lower(), head
    assert json.loads(payload)["detail"]
    _refuses_a_foreign_host_as_json(base, key)


@pytest.mark.parametrize("service", ["granian"], indirect=True)
def test_granian_takes_every_search_the_api_allows_in_a_url_and_refuses_the_rest_by_status(
    service,
):
    """granian reads request lines up to 64 KiB, so a search of 1,000 CJK characters works as
    a GET too; what it cannot read it refuses with the status and no body (docs/api.md)."""
    base, key, _ = service
    status, body = _call("GET", f"{base}/search?q={urllib.parse.quote('缓存失效' * 250)}", key)
    assert status == 200 and len(body["query"]) == 1_000, body
    status, body = _call("GET", f"{base}/search?q={'x' * 1_001}", key)
    assert status == 422 and body["detail"], body  # the API's own limit, as JSON

    head, payload = _raw(base, b"GET /api/v1/search?q=" + b"x" * 70_000 + b" HTTP/1.1\r\n\r\n")
    assert head.split(b" ")[1] == b"414" and payload == b"", head
    head, payload = _raw(base, b"NOT AN HTTP REQUEST\r\n\r\n")
    assert head.split(b" ")[1] == b"400" and payload == b"", head
    _refuses_a_foreign_host_as_json(base, key)


@pytest.mark.parametrize("service", ["granian", "gunicorn"], indirect=True)
def test_a_request_refused_before_its_body_arrives_leaves_the_connection_to_the_next(service):
    """The MCP SDK's client sends its fallback request on the connection that carried its
    refused first one; the refusal (a 401 decided from the headers) must not cost it that
    connection, however late the body comes after the headers."""
    base, _, _ = service
    host, port = urllib.parse.urlsplit(base).netloc.split(":")
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer hm_nonsense\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        reader = conn.makefile("rb")
        for attempt in range(3):
            conn.sendall(head)
            if attempt == 0:
                time.sleep(0.3)  # the body well after the headers
            conn.sendall(body)
            status = reader.readline()
            assert status.startswith(b"HTTP/1.1 401"), (attempt, status)
            headers = {}
            while (line := reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode().partition(":")
                headers[name.strip().lower()] = value.strip()
            assert headers.get("connection", "").lower() != "close", (attempt, headers)
            answer = json.loads(reader.read(int(headers["content-length"])))
            assert "Unknown or revoked channel key" in answer["error"]["message"]


@pytest.fixture(params=["granian", "gunicorn"])
def service_with_header_variables(tmp_path, request):
    """The service, its environment holding variables named as request headers."""
    with (
        FakeModelServer() as model,
        isolated_env(tmp_path, server=f"  web_server: {request.param}\n") as env,
    ):
        yield from _processes({**env, "HTTP_X_REQUEST_ID": "from-the-environment"}, model)


def test_a_variable_of_the_server_s_environment_is_no_header_of_a_request(
    service_with_header_variables,
):
    """granian merges its environment into every request's variables: a variable named as a
    header read as that header on every request that did not send it."""
    base, key, _ = service_with_header_variables
    host, port = urllib.parse.urlsplit(base).netloc.split(":")
    web = http.client.HTTPConnection(host, int(port), timeout=30)
    for sent in (None, "the-client-s-own"):
        web.request(
            "GET",
            "/api/v1/sessions",
            headers={"Authorization": f"Bearer {key}", **({"X-Request-ID": sent} if sent else {})},
        )
        answer = web.getresponse()
        answer.read()
        assert answer.status == 200
        given = answer.getheader("X-Request-ID")
        assert given != "from-the-environment"
        assert (given == sent) if sent else (len(given) == 32)  # a fresh id: a UUID's hex
    web.close()


def _refuses_a_foreign_host_as_json(base: str, key: str) -> None:
    host, port = urllib.parse.urlsplit(base).netloc.split(":")
    web = http.client.HTTPConnection(host, int(port), timeout=30)
    web.putrequest("GET", "/api/v1/sessions", skip_host=True)
    web.putheader("Host", "scanner.example")
    web.putheader("Authorization", f"Bearer {key}")
    web.endheaders()
    refused = web.getresponse()
    assert refused.status == 400
    assert refused.getheader("Content-Type").startswith("application/json")
    assert json.loads(refused.read())["detail"]
    web.close()
