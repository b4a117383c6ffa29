"""Re-records ``tests/data/hermes_working_list.json``: what the real Hermes Agent hands its
plugin hooks as ``conversation_history`` (its working list, Hermes's own keys and all), after
three turns through its gateway, the second and third from a session Hermes reloaded from its
state.db, one with a tool call. Run from the repository root with the peer installed:

    .venv/bin/python -m tests.record_hermes_working_list
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from compression.testing.fake_model import FakeModelServer
from tests.hermes_peer import HermesGateway, HermesHome, ScriptedAgent

OUT = Path(__file__).resolve().parent / "data" / "hermes_working_list.json"
RECORDER = """
import json, os


def _dump(**kwargs):
    path = os.path.join(os.environ["HERMES_HOME"], "working-list.json")
    with open(path, "w", encoding="utf-8") as out:
        json.dump(kwargs.get("conversation_history"), out, default=str)


def register(ctx):
    ctx.register_hook("post_llm_call", _dump)
"""


def main() -> None:
    with FakeModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        server.script.default = ScriptedAgent(prompt_tokens=lambda body: 1_000).behaviour()
        home = HermesHome(Path(tmp) / "home", server.base_url)
        plugin = home.path / "plugins" / "dump-history"
        plugin.mkdir(parents=True)
        (plugin / "plugin.yaml").write_text("name: dump-history\nversion: 0.1.0\n")
        (plugin / "__init__.py").write_text(RECORDER)
        home.configure({"plugins": {"enabled": ["dump-history"]}})
        with HermesGateway(home) as gateway:
            gateway.turn("  Remember the vault code 4417.  ")
            gateway.turn("now run `echo vault-4417`")
            gateway.turn("thanks")
        history = json.loads((home.path / "working-list.json").read_text(encoding="utf-8"))
    OUT.write_text(json.dumps(history, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({len(history)} messages)")


if __name__ == "__main__":
    main()
