"""For the tests of the Hermes plugin (``hermes_plugin/``, a package of its own that Hermes's
environment installs):

- its modules, importable here without installing it (all but ``engine`` need only the
  standard library);
- :func:`install_plugin`: ``pip install ./hermes_plugin`` with the real Hermes's Python, as its
  README says, once per test process -- into a folder of its own that the Hermes processes of
  the tests find through ``PYTHONPATH`` (:data:`PLUGIN_SITE`), so that two test runs side by
  side (the SQLite and the PostgreSQL pass) never reinstall into the peer's shared virtualenv
  under each other;
- :class:`LiveService`: the service as deployed (``manage.py serve``: gunicorn and the worker)
  on a database of its own, stoppable and startable again on the same port;
- :class:`PluginAgent`: the loopback model behind both Hermes and the service's summariser.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PLUGIN_ROOT = Path(__file__).resolve().parent.parent / "hermes_plugin"
if str(PLUGIN_ROOT) not in sys.path:
    sys.path.insert(0, str(PLUGIN_ROOT))

from hermes_memory_plugin import convert, cursor, delivery, settings, store, sync  # noqa: E402

from compression.testing.fake_model import TRANSCRIPT, Reply, digest  # noqa: E402
from tests.hermes_peer import HERMES_PYTHON, RUN, ScriptedAgent, text_of  # noqa: E402
from tests.processes import ROOT, python, stop_all, wait_for  # noqa: E402

__all__ = ["PLUGIN_ROOT", "convert", "cursor", "delivery", "settings", "store", "sync"]
RECALL = re.compile(r"recall `([^`]+)`")
_installed: dict[str, str | None] = {}
PLUGIN_SITE = Path(tempfile.mkdtemp(prefix="hermes-memory-plugin-"))


def install_plugin() -> str | None:
    """Install the plugin into :data:`PLUGIN_SITE` (once per test process); None when it is
    installed, else why it could not be."""
    if "result" not in _installed:
        done = subprocess.run(
            [
                str(HERMES_PYTHON),
                "-m",
                "pip",
                "install",
                "--no-deps",
                "--no-input",
                "--disable-pip-version-check",
                "--target",
                str(PLUGIN_SITE),
                str(PLUGIN_ROOT),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        _installed["result"] = (
            None
            if done.returncode == 0
            else f"pip install ./hermes_plugin failed: {(done.stdout + done.stderr)[-600:]}"
        )
    return _installed["result"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(method: str, url: str, key: str, body: Any = None, timeout: float = 60):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)  # noqa: S310 - loopback
    request.add_header("Authorization", f"Bearer {key}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - loopback
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


class LiveService:
    """``manage.py serve`` on ``env``'s database, with a channel key; ``stop()`` and
    ``start()`` again keep the port and the data, as a restarted deployment does."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.port = free_port()
        out = python("manage.py", "create_channel", "hermes", env=env, timeout=60)
        self.key = out.split("store it now): ")[1].strip()
        self.url = f"http://127.0.0.1:{self.port}"
        self.api = f"{self.url}/api/v1"
        self._processes: list[subprocess.Popen] = []

    def start(self) -> None:
        self._processes = [
            subprocess.Popen(
                [sys.executable, "manage.py", "serve", "--no-migrate"],
                cwd=ROOT,
                env={**self.env, "HERMES_ADDR": f"127.0.0.1:{self.port}"},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        ]
        wait_for(lambda: self.get("/sessions", timeout=5)[0] == 200, "the service", 120)

    def stop(self) -> None:
        stop_all(self._processes)
        self._processes = []

    @property
    def running(self) -> bool:
        return bool(self._processes)

    def get(self, path: str, timeout: float = 60):
        return call("GET", self.api + path, self.key, timeout=timeout)

    def post(self, path: str, body: Any, timeout: float = 60):
        return call("POST", self.api + path, self.key, body, timeout=timeout)

    def rows(self, session_id: str) -> list[dict[str, Any]]:
        """Every row of the session, in conversation order."""
        rows, after = [], None
        while True:
            query = "?limit=1000" + (f"&after={after}" if after is not None else "")
            status, page = self.get(f"/sessions/{session_id}/messages{query}")
            assert status == 200, page
            rows += page["items"]
            after = page["next_after"]
            if after is None:
                return rows


@dataclass
class PluginAgent(ScriptedAgent):
    """The loopback model behind a Hermes using the plugin *and* behind the service: the
    service's summary requests (its transcript marker) get a digest of the transcript, and a
    user message that says ``recall `words``` makes the model call the plugin's recall tool."""

    service_summaries: list[dict[str, Any]] = field(default_factory=list)
    _recalls: int = 0

    def answer(self, body: dict[str, Any] | None) -> Reply:
        messages = (body or {}).get("messages") or []
        last = messages[-1] if messages else {}
        if TRANSCRIPT in text_of(last):
            self.service_summaries.append(body or {})
            return Reply(digest(body, 0.05), usage={"prompt_tokens": 900, "completion_tokens": 90})
        asked = RECALL.search(text_of(last)) if last.get("role") == "user" else None
        if asked and not RUN.search(text_of(last)) and (body or {}).get("tools"):
            self.requests.append(body or {})
            self._recalls += 1
            call_ = {
                "id": f"recall_{self._recalls:04d}",
                "type": "function",
                "function": {
                    "name": "memory_recall",
                    "arguments": json.dumps({"query": asked.group(1)}),
                },
            }
            return Reply(
                None,
                tool_calls=[call_],
                usage={"prompt_tokens": self.prompt_tokens(body), "completion_tokens": 20},
            )
        return super().answer(body)
