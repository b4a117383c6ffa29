"""Our masks against the real Hermes Agent's (``agent.redact.redact_sensitive_text``, which
Hermes runs before its own compaction), on the shapes issue 32 names: wherever Hermes hides a
secret, ours hides it too. Hermes keeps a long token's first 6 and last 4 characters; ours
keeps none, so "hidden" here means the whole secret no longer appears."""

from __future__ import annotations

import json
import random
import string
import subprocess

import pytest

from core.redaction import NAMES, Redactor, compile_rules
from tests.hermes_peer import HERMES_PYTHON, needs_hermes

pytestmark = [needs_hermes, pytest.mark.peer]

AROUND = ["", "部署用的密钥", "see ", "令牌：", "(", "config: ", "「"]  # noqa: RUF001
AFTER = ["", "，别忘了", " now", "。", ")", "\n", "」"]  # noqa: RUF001


def _word(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def samples(n: int = 240) -> list[tuple[str, str]]:
    """(text, secret) pairs of every named shape, seeded so a failure is reproducible."""
    rng = random.Random(32)  # noqa: S311
    alnum = string.ascii_letters + string.digits
    shapes = [
        lambda: "sk-proj-" + _word(rng, alnum, 40),
        lambda: "sk-ant-api03-" + _word(rng, alnum + "_-", 60),
        lambda: "ghp_" + _word(rng, alnum, 36),
        lambda: "github_pat_" + _word(rng, alnum + "_", 60),
        lambda: "xoxb-" + _word(rng, string.digits, 12) + "-" + _word(rng, alnum, 24),
        lambda: "AIza" + _word(rng, alnum + "_-", 35),
        lambda: "sk_live_" + _word(rng, alnum, 30),
        lambda: "hf_" + _word(rng, alnum, 34),
        lambda: "AKIA" + _word(rng, string.ascii_uppercase + string.digits, 16),
    ]
    out = []
    for k in range(n):
        kind = k % 5
        if kind == 0:
            secret = rng.choice(shapes)()
            text = secret
        elif kind == 1:
            secret = _word(rng, alnum + "._-", 40)
            text = f"Authorization: Bearer {secret}"
        elif kind == 2:
            secret = _word(rng, alnum, 16)
            text = f"postgres://deploy:{secret}@db.internal:5432/app"
        elif kind == 3:
            secret = _word(rng, alnum, 24)
            name = rng.choice(["OPENAI_API_KEY", "GITHUB_TOKEN", "JWT_SECRET", "DB_PASSWORD"])
            text = f"{name}={secret}"
        else:
            body = "\n".join(_word(rng, alnum + "+/", 64) for _ in range(4))
            secret = body.splitlines()[1]
            text = f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----"
        out.append((rng.choice(AROUND) + text + rng.choice(AFTER), secret))
    return out


def hermes_masks(texts: list[str], tmp) -> list[str]:
    script = (
        "import json, sys\n"
        "from agent.redact import redact_sensitive_text\n"
        "texts = json.load(sys.stdin)\n"
        "print(json.dumps([redact_sensitive_text(t, force=True, redact_url_credentials=True)"
        " for t in texts]))\n"
    )
    done = subprocess.run(
        [str(HERMES_PYTHON), "-c", script],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=tmp,  # not the repository, whose own agent/ package would shadow Hermes's
    )
    return json.loads(done.stdout)


def test_every_secret_hermes_hides_is_hidden_by_ours_too(tmp_path):
    pairs = samples()
    theirs = hermes_masks([text for text, _ in pairs], tmp_path)
    ours = Redactor(compile_rules(NAMES, {}))
    hidden_by_hermes = [(t, s) for (t, s), h in zip(pairs, theirs, strict=True) if s not in h]
    assert len(hidden_by_hermes) >= len(pairs) * 0.8  # the shapes are secrets to Hermes too
    leaked = [t for t, s in hidden_by_hermes if s in ours.mask(t)]
    assert leaked == []
    # And ours hides every sample, including any Hermes let through.
    assert [t for t, s in pairs if s in ours.mask(t)] == []
