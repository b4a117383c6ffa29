"""A scriptable OpenAI-compatible chat-completions server on loopback, for tests and the demo.

Each request takes the next scripted behaviour (or the default one) and is recorded, so tests can
assert on what the service really sent. Behaviours:

* ``Reply(content, reasoning=None, delay=0, chunk_delay=0)`` -- success, streamed or not;
* ``Fail(status, message, code=None, type=None)`` -- an HTTP error with an OpenAI error body;
* ``Malformed()`` -- a 200 whose body is not JSON; ``Drop()`` -- the connection is closed;
* ``Digest(ratio)`` -- a summary in proportion to the transcript asked about (the demo's);
* ``Respond(fn)`` -- ``fn(body)`` picks the behaviour from the request itself (a peer such as
  Hermes Agent sends its chat turns and its own summary requests to one server).

A ``Reply``'s ``usage`` is what the server reports (``usage.prompt_tokens`` drives a client's own
compaction); streamed replies carry it in the last chunk when ``stream_options.include_usage``
asks, and stream tool calls as OpenAI does (id and name first, then the arguments in pieces).

``POST …/chat/completions`` answers as chat completions; ``POST …/responses`` as the Responses
API, with a ``compaction`` output item first when the Reply has ``compaction``; with ``"stream":
true`` as server-sent events (``response.created``, ``response.output_item.added``,
``response.output_text.delta``, ``response.output_item.done``, ``response.completed`` with the
usage), which is what the Codex app server speaks to a custom model provider.

Run on its own (the demo's summariser)::

    python -m compression.testing.fake_model --port 8089
"""

from __future__ import annotations

import argparse
import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast


@dataclass
class Reply:
    content: str | None = "A summary."
    reasoning: str | None = None
    delay: float = 0.0  # before the first byte
    chunk_delay: float = 0.0  # between streamed chunks
    chunks: int = 4
    usage: dict[str, int] | None = None
    # Responses API only: the server compacted the context; this is the compaction item's
    # (opaque) encrypted_content, sent before the reply as OpenAI does.
    compaction: str | None = None
    # Chat completions (not streamed): the model calls tools, as OpenAI's ``message.tool_calls``.
    tool_calls: list[dict[str, Any]] | None = None
    # Why the reply ended: "length" is a reply cut off at the provider's output limit (a
    # Responses answer is then ``incomplete``, reason ``max_output_tokens``). None: "stop", or
    # "tool_calls" with tool calls.
    finish_reason: str | None = None

    @property
    def finish(self) -> str:
        return self.finish_reason or ("tool_calls" if self.tool_calls else "stop")


@dataclass
class Fail:
    status: int
    message: str = "error"
    code: str | None = None
    type: str | None = None
    delay: float = 0.0


@dataclass
class Malformed:
    pass


@dataclass
class Raw:
    """A 200 with any JSON body: for replies that are JSON but not a chat completion."""

    body: Any = None


@dataclass
class Drop:
    pass


@dataclass
class Digest:
    """For the demo: a summary in proportion to what it was asked to summarise (``ratio`` of the
    transcript's characters, its message headers and first lines taken evenly), so a long span
    gets a summary the engine accepts; a request that is not a summary gets a short reply."""

    ratio: float = 0.05


@dataclass
class Respond:
    """A behaviour chosen per request: ``fn`` gets the request body (None if it was not JSON)
    and returns any other behaviour."""

    fn: Callable[[dict[str, Any] | None], Reply | Fail | Malformed | Drop | Raw | Digest]


Behaviour = Reply | Fail | Malformed | Drop | Raw | Digest | Respond

TRANSCRIPT = "TRANSCRIPT TO SUMMARISE:"
_SERIALS = itertools.count(1)


def digest(body: dict[str, Any] | None, ratio: float) -> str:
    messages = (body or {}).get("messages") or []
    prompt = messages[-1].get("content") if messages else (body or {}).get("input", "")
    prompt = prompt if isinstance(prompt, str) else ""  # a Responses request's input, as text
    if TRANSCRIPT not in prompt:
        return f"(loopback model) I read {len(messages)} message(s); this is a scripted reply."
    transcript = prompt.split(TRANSCRIPT, 1)[1]
    lines = [line.strip()[:160] for line in transcript.splitlines() if line.strip()]
    want = max(400, int(len(transcript) * ratio))
    size = sum(len(line) + 3 for line in lines) or 1
    step = max(1, round(size / want))
    picked = "\n".join(f"- {line}" for line in lines[::step])
    return (
        "## Goal\nSummarised by the loopback test model (a digest of the transcript).\n"
        f"## Completed actions\n{picked}\n## Current state\nAs the last lines above say."
    )


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None


@dataclass
class Script:
    default: Behaviour = field(default_factory=Reply)
    queue: deque[Behaviour] = field(default_factory=deque)
    requests: list[Recorded] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self) -> Behaviour:
        with self.lock:
            return self.queue.popleft() if self.queue else self.default


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        return

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": "fake-summary", "object": "model"}]})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        script = self.server.script
        with script.lock:
            script.requests.append(Recorded(self.path, dict(self.headers.items()), body))
        behaviour = script.next()
        if isinstance(behaviour, Respond):
            behaviour = behaviour.fn(body)
        if isinstance(behaviour, Digest):
            behaviour = Reply(digest(body, behaviour.ratio))
        if isinstance(behaviour, Drop):
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if isinstance(behaviour, Raw):
            self._json(200, behaviour.body)
            return
        if isinstance(behaviour, Malformed):
            data = b"{this is not json"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if isinstance(behaviour, Fail):
            time.sleep(behaviour.delay)
            error = {"message": behaviour.message, "type": behaviour.type, "code": behaviour.code}
            self._json(behaviour.status, {"error": error})
            return
        time.sleep(behaviour.delay)
        model = (body or {}).get("model", "fake")
        if self.path.rstrip("/").endswith("/responses"):
            if (body or {}).get("stream"):
                self._stream_response(behaviour, model)
            else:
                self._json(200, _response(behaviour, model))
            return
        if (body or {}).get("stream"):
            usage = ((body or {}).get("stream_options") or {}).get("include_usage")
            self._stream(behaviour, model, with_usage=bool(usage))
        else:
            message: dict[str, Any] = {"role": "assistant", "content": behaviour.content}
            if behaviour.reasoning is not None:
                message["reasoning_content"] = behaviour.reasoning
            if behaviour.tool_calls:
                message["tool_calls"] = behaviour.tool_calls
            self._json(
                200,
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": behaviour.finish,
                        }
                    ],
                    "usage": behaviour.usage
                    or {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
                },
            )

    def _start_events(self) -> None:
        """The head of a server-sent-event answer; the stream ends when the connection closes."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _stream(self, behaviour: Reply, model: str, *, with_usage: bool = False) -> None:
        self._start_events()

        def send(delta: dict[str, Any], finish: str | None = None) -> None:
            chunk = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()

        try:
            send({"role": "assistant", "content": ""})
            if behaviour.reasoning:
                send({"reasoning_content": behaviour.reasoning})
            text = behaviour.content or ""
            size = max(1, -(-len(text) // max(1, behaviour.chunks)))
            for start in range(0, len(text), size):
                time.sleep(behaviour.chunk_delay)
                send({"content": text[start : start + size]})
            for index, call in enumerate(behaviour.tool_calls or ()):
                # As OpenAI streams a call: its id and name first, then the arguments in pieces.
                function = call.get("function") or {}
                head = {"index": index, "id": call.get("id"), "type": "function"}
                send({"tool_calls": [{**head, "function": {"name": function.get("name")}}]})
                arguments = function.get("arguments") or ""
                half = len(arguments) // 2
                for piece in (arguments[:half], arguments[half:]):
                    send({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            send({}, finish=behaviour.finish)
            if with_usage:
                usage = behaviour.usage or {"prompt_tokens": 10, "completion_tokens": 10}
                chunk = {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion.chunk",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [],
                    "usage": {
                        **usage,
                        "total_tokens": usage.get("prompt_tokens", 0)
                        + usage.get("completion_tokens", 0),
                    },
                }
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return  # the client gave up (a timeout under test)

    def _stream_response(self, behaviour: Reply, model: str) -> None:
        """The Responses API's event stream: the finished response's items, the text in deltas."""
        self._start_events()
        final = _response(behaviour, model)
        started = {**final, "status": "in_progress", "output": [], "usage": None}

        def send(kind: str, **fields: Any) -> None:
            data = json.dumps({"type": kind, **fields})
            self.wfile.write(f"event: {kind}\ndata: {data}\n\n".encode())
            self.wfile.flush()

        try:
            send("response.created", response=started)
            for index, item in enumerate(final["output"]):
                if item["type"] != "message":
                    send("response.output_item.added", output_index=index, item=item)
                    send("response.output_item.done", output_index=index, item=item)
                    continue
                send("response.output_item.added", output_index=index, item={**item, "content": []})
                text = item["content"][0]["text"]
                size = max(1, -(-len(text) // max(1, behaviour.chunks)))
                for start in range(0, len(text), size):
                    time.sleep(behaviour.chunk_delay)
                    delta = text[start : start + size]
                    send(
                        "response.output_text.delta",
                        item_id=item["id"],
                        output_index=index,
                        content_index=0,
                        delta=delta,
                    )
                send("response.output_item.done", output_index=index, item=item)
            kind = (
                "response.incomplete" if final["status"] == "incomplete" else "response.completed"
            )
            send(kind, response=final)
        except (BrokenPipeError, ConnectionResetError):
            return  # the client gave up


def _response(behaviour: Reply, model: str) -> dict[str, Any]:
    """A Responses API ``response`` object (ids differ per response, as OpenAI's do)."""
    serial = next(_SERIALS)
    output: list[dict[str, Any]] = []
    if behaviour.compaction is not None:
        output.append(
            {
                "type": "compaction",
                "id": f"cmp_{abs(hash(behaviour.compaction)) % 10**8}",
                "encrypted_content": behaviour.compaction,
            }
        )
    output.append(
        {
            "type": "message",
            "id": f"msg_fake_{serial}",
            "role": "assistant",
            "status": "completed",
            "content": [
                {"type": "output_text", "text": behaviour.content or "", "annotations": []}
            ],
        }
    )
    usage = behaviour.usage or {"input_tokens": 10, "output_tokens": 10}
    cut = behaviour.finish_reason in ("length", "content_filter")
    reason = "max_output_tokens" if behaviour.finish_reason == "length" else "content_filter"
    if cut:
        output[-1]["status"] = "incomplete"
    return {
        "id": f"resp_fake_{serial}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "incomplete" if cut else "completed",
        "incomplete_details": {"reason": reason} if cut else None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": usage.get("input_tokens", 10),
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": usage.get("output_tokens", 10),
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.get("input_tokens", 10) + usage.get("output_tokens", 10),
        },
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    script: Script


class FakeModelServer:
    """Start with ``with FakeModelServer() as server:``; ``server.base_url`` ends in ``/v1``."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.script = Script()
        self._server = _Server((host, port), _Handler)
        self._server.script = self.script
        # A short poll: stopping waits for the loop to notice (0.5 s by default, in every test).
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{cast(str, host)}:{port}/v1"  # an AF_INET address: (str, int)

    @property
    def requests(self) -> list[Recorded]:
        return self.script.requests

    def then(self, *behaviours: Behaviour) -> FakeModelServer:
        self.script.queue.extend(behaviours)
        return self

    def start(self) -> FakeModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description="A loopback OpenAI-compatible summariser.")
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument(
        "--summary",
        default=None,
        help="Fixed reply; by default a digest of the transcript it is asked to summarise "
        "(about 5%% of its length).",
    )
    args = parser.parse_args()
    server = FakeModelServer(port=args.port)
    server.script.default = Reply(content=args.summary) if args.summary else Digest()
    print(f"Fake model listening on {server.base_url} (Ctrl-C stops it)")
    server._thread.run()


if __name__ == "__main__":
    main()
