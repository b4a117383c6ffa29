"""Secret shapes are masked in everything that leaves for compaction (the summariser, a hook,
server-side compaction) and in every summary written, while the stored originals stay byte for
byte (compression.redaction, core.redaction)."""

from __future__ import annotations

import json
import string

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from compression.engine.compress import compress
from compression.models import CompressionEvent
from compression.testing.fake_model import FakeModelServer, Reply
from core.config import ConfigError, parse_config
from core.redaction import NAMES, Redactor, Tally, compile_rules
from sessions_app import services
from sessions_app.models import Message
from tests.test_compaction_hooks import HookServer
from tests.test_compression import make_session, originals_digest, turn

ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
B64 = ALNUM + "+/"


def chars(alphabet: str, low: int, high: int) -> st.SearchStrategy[str]:
    return st.text(alphabet, min_size=low, max_size=high)


# Each shape: (kind, a strategy for (the text holding the secret, the secret value itself)).
def _prefixed(prefix: str, alphabet: str, low: int) -> st.SearchStrategy[tuple[str, str]]:
    return chars(alphabet, low, low + 30).map(lambda body: (prefix + body, prefix + body))


SHAPES: dict[str, st.SearchStrategy[tuple[str, str]]] = {
    "openai": _prefixed("sk-proj-", ALNUM + "_-", 24),
    "anthropic": _prefixed("sk-ant-api03-", ALNUM + "_-", 40),
    "github": _prefixed("ghp_", ALNUM, 36),
    "slack": _prefixed("xoxb-", ALNUM + "-", 20),
    "google": chars(ALNUM + "_-", 35, 35).map(lambda b: ("AIza" + b, "AIza" + b)),
    "stripe": _prefixed("sk_live_", ALNUM, 24),
    "aws": chars(UPPER, 16, 16).map(lambda b: ("AKIA" + b, "AKIA" + b)),
    "bearer": chars(ALNUM + "._-", 20, 60).map(lambda t: (f"Authorization: Bearer {t}", t)),
    "pem": st.lists(chars(B64, 64, 64), min_size=2, max_size=5).map(
        lambda lines: (
            "-----BEGIN RSA PRIVATE KEY-----\n"
            + "\n".join(lines)
            + "\n-----END RSA PRIVATE KEY-----",
            "\n".join(lines),
        )
    ),
    "url": st.tuples(chars(string.ascii_lowercase, 3, 10), chars(ALNUM + "!$*", 6, 24)).map(
        # The password opens with a capital: never a piece of the lower-case user name.
        lambda up: (f"postgres://{up[0]}:P{up[1]}@db.internal:5432/app", "P" + up[1])
    ),
    "env": st.tuples(
        st.sampled_from(["OPENAI_API_KEY", "GITHUB_TOKEN", "JWT_SECRET", "DB_PASSWORD"]),
        chars(ALNUM + "!@#%^*", 8, 40),
    ).map(lambda nv: (f"{nv[0]}={nv[1]}", nv[1])),
}

# What may sit beside a secret: prose in English and Chinese, and between them a separator or a
# CJK character (the case \b gets wrong: 密钥sk-… has no word boundary). A key glued onto a
# Latin letter is not a key ("task-…" holds "sk-…").
CJK = "密钥是这个令牌配置文件里的部署失败了请检查"
AROUND = st.text(string.ascii_letters + " .,:;()\n" + CJK, max_size=40)
EDGE = st.sampled_from([" ", "\n", "，", "：", "密", "「", "("])  # noqa: RUF001


@pytest.fixture(scope="module")
def everything() -> Redactor:
    return Redactor(compile_rules(NAMES, {}))


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shape=st.sampled_from(sorted(SHAPES)),
    data=st.data(),
    before=AROUND,
    after=AROUND,
    left=EDGE,
    right=EDGE,
)
def test_every_built_in_shape_is_masked_whatever_surrounds_it(
    everything, shape, data, before, after, left, right
):
    text, secret = data.draw(SHAPES[shape])
    assume(secret not in before + after)  # the prose around it may not hold it by chance
    sent = f"{before}{left}{text}{right}{after}"
    tally = Tally()
    masked = everything.mask(sent, tally)
    assert secret not in masked
    assert "[REDACTED:" in masked
    assert tally.total >= 1
    assert masked.startswith(before + left) or shape in ("env", "bearer", "url")
    if shape != "env":  # an unquoted NAME=value runs to the next space, "(" and all
        assert masked.endswith(right + after)
    # Masking again changes nothing and counts nothing: text masked twice counts once.
    again = Tally()
    assert everything.mask(masked, again) == masked
    assert again.total == 0


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens=500 and prompt_tokens: 10",
        "see /srv/app/settings.py line 42; version 3.11.2",
        "we use sk-learn and scikit-learn",
        "the bearer of bad news",
        "monkey: banana",
        "部署失败了，请检查 nginx.conf 的第 12 行",  # noqa: RUF001
        "https://example.com/docs?page=2",
    ],
)
def test_ordinary_text_passes_unchanged(everything, text):
    assert everything.mask(text) == text


def test_a_pem_block_cut_before_its_end_line_is_still_masked(everything):
    clipped = "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAEbm9uZQ"
    masked = everything.mask(clipped)
    assert "b3BlbnNzaC1rZXktdjEAAAAA" not in masked and "AAAEbm9uZQ" not in masked


def test_extra_patterns_mask_their_secret_group_or_the_whole_match():
    rules = compile_rules((), {"ticket": r"TCK-(?P<secret>\d{6})", "pin": r"PIN \d{4}"})
    masked = Redactor(rules).mask("TCK-123456 and PIN 9876")
    assert masked == "TCK-[REDACTED:ticket] and [REDACTED:pin]"


@pytest.mark.parametrize(
    ("block", "said"),
    [
        ({"patterns": ["passwords"]}, "unknown pattern 'passwords'"),
        ({"extra_patterns": {"x": "("}}, "not a regular expression"),
        ({"extra_patterns": {"x": "a*"}}, "matches empty text"),
        ({"extra_patterns": {"Bad Name": "abc"}}, "lower-case letters"),
    ],
)
def test_a_redaction_setting_that_cannot_work_stops_start_up(block, said):
    with pytest.raises(ConfigError, match=said):
        parse_config({"compression": {"redaction": block}})


# --- Every path out ------------------------------------------------------------------------

KEY = "sk-proj-Zq8xW2vN5mK7pL3rT9yB4cD6fG1hJ0aS"
AWS = "AKIAIOSFODNN7EXAMPLE"
PASSWORD = "hunter2-Sup3rS3cret"
PEM_BODY = "MIIEowIBAAKCAQEA7bq98rUhZ3Xo5Yk0Q2w"
SECRETS = (KEY, AWS, PASSWORD, PEM_BODY)


def secret_turns() -> list[dict]:
    """A user pasting a key (in Chinese prose), a tool call carrying a password in a URL, a
    tool result dumping a .env file and a private key."""
    return [
        {"role": "user", "content": f"部署用的密钥{KEY}，别忘了"},  # noqa: RUF001
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_env",
                    "type": "function",
                    "function": {
                        "name": "run_shell",
                        "arguments": json.dumps(
                            {"cmd": f"psql postgres://deploy:{PASSWORD}@db:5432/app"}
                        ),
                    },
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_env",
            "name": "run_shell",
            "content": f"AWS_ACCESS_KEY_ID={AWS}\nDB_PASSWORD={PASSWORD}\n"
            f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----\n",
        },
        {"role": "assistant", "content": "Connected; the migration ran."},
    ]


@pytest.fixture
def secret_session(channel):
    session = make_session(channel, turns=3)
    services.append_messages(session, secret_turns())
    services.append_messages(session, [m for n in range(3, 12) for m in turn(n)])
    session.refresh_from_db()
    return session


def stored(session) -> list[tuple]:
    return list(
        Message.objects.filter(session=session, is_summary=False)
        .order_by("position")
        .values_list("content", "tool_calls")
    )


def test_no_secret_reaches_the_summariser_and_the_originals_stay_as_sent(
    summariser, model_server, secret_session
):
    before, digest = stored(secret_session), originals_digest(secret_session)
    model_server.script.default = Reply("## Goal\nDeployed. " + "The migration ran. " * 40)
    result = compress(
        secret_session, focus=f"the key {KEY}", memory_context=f"DB_PASSWORD={PASSWORD}"
    )
    assert result.outcome == CompressionEvent.Outcome.COMPRESSED
    sent = json.dumps([r.body for r in model_server.requests], ensure_ascii=False)
    for secret in SECRETS:
        assert secret not in sent
    assert "[REDACTED:api_key]" in sent and "[REDACTED:private_key]" in sent
    assert "部署用的密钥[REDACTED:api_key]，别忘了" in sent  # the prose around it is kept  # noqa: RUF001
    assert stored(secret_session) == before and originals_digest(secret_session) == digest
    event = result.events[0]
    assert event.redactions["api_key"] == 2  # the message and the focus
    assert event.redactions["url_password"] == 1
    assert event.redactions["private_key"] == 1
    assert sum(event.redactions.values()) >= 6
    assert not any(secret in json.dumps(event.redactions) for secret in SECRETS)


def test_a_summary_can_never_hold_a_masked_shape_even_if_the_model_writes_one(
    summariser, model_server, secret_session
):
    model_server.script.default = Reply(f"## Goal\nUse {KEY} and {AWS}. " + "Done. " * 60)
    summary = compress(secret_session).passes[0].summary
    assert KEY not in summary.content and AWS not in summary.content
    assert "[REDACTED:api_key]" in summary.content


def test_the_local_fallback_summary_is_built_from_masked_rows(hermes_config, secret_session):
    hermes_config()  # no summary model: the local summary
    result = compress(secret_session)
    assert result.outcome == CompressionEvent.Outcome.FALLBACK
    content = result.passes[0].summary.content
    for secret in SECRETS:
        assert secret not in content
    assert result.events[0].redactions


def test_switched_off_the_summariser_gets_the_text_as_stored(
    summariser, model_server, secret_session
):
    summariser(redaction={"enabled": False})
    model_server.script.default = Reply("## Goal\nDeployed. " + "The migration ran. " * 40)
    result = compress(secret_session)
    sent = json.dumps([r.body for r in model_server.requests], ensure_ascii=False)
    assert KEY in sent and PASSWORD in sent
    assert result.events[0].redactions == {}


def test_only_the_named_shapes_are_masked(summariser, model_server, secret_session):
    summariser(redaction={"patterns": ["aws_keys"]})
    model_server.script.default = Reply("## Goal\nDeployed. " + "The migration ran. " * 40)
    result = compress(secret_session)
    sent = json.dumps([r.body for r in model_server.requests], ensure_ascii=False)
    assert AWS not in sent and KEY in sent
    assert result.events[0].redactions == {"aws_key": 1}


def test_hooks_get_masked_rows_and_a_masked_summary(hermes_config, secret_session):
    with HookServer() as receiver:
        hermes_config(
            compression={
                "hooks": {
                    "pre_compact": receiver.url("/pre"),
                    "post_compact": receiver.url("/post"),
                    "include_rows": True,
                    "timeout_seconds": 1,
                }
            }
        )
        result = compress(secret_session)
        from compression.engine.checkpoint import deliver_post_compact

        deliver_post_compact(result.events[0].pk)
        bodies = [r.body.decode() for r in receiver.requests]
    assert len(bodies) == 2
    for body in bodies:
        for secret in SECRETS:
            assert secret not in body
    assert "REDACTED:url_password" in bodies[0]


def test_server_side_compaction_is_sent_masked(gateway, hermes_config):
    with FakeModelServer() as model:
        model.script.default = Reply("Noted.", usage={"input_tokens": 900, "output_tokens": 5})
        hermes_config(
            model={"default": "gpt-5.1", "base_url": model.base_url},
            compression={
                "codex_responses_native": True,
                "codex_responses_compact_threshold": 100_000,
            },
        )
        sid = gateway.open(model="gpt-5.1", system_prompt=f"Deploy with {AWS}")["id"]
        response = gateway.post(f"/sessions/{sid}/turn", {"content": f"my key is {KEY}"})
        assert response.status_code == 200, response.content
        sent = json.dumps(model.requests[-1].body)
    assert KEY not in sent and AWS not in sent
    assert "[REDACTED:api_key]" in sent
    stored_rows = Message.objects.filter(session_id=sid).values_list("content", flat=True)
    assert any(KEY in (c or "") for c in stored_rows)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    planted=st.lists(
        st.tuples(st.sampled_from(sorted(SHAPES)), st.data(), st.integers(0, 3)),
        min_size=1,
        max_size=4,
    )
)
def test_no_generated_secret_reaches_the_summariser_wherever_it_sits(
    summariser, model_server, channel, planted
):
    """Secrets of any shape, in any kind of row (a user's text, an assistant's, a tool call's
    arguments, a tool result), never appear in what the summariser is sent, and the summary
    written never holds them."""
    session = make_session(channel, turns=2)
    secrets, texts = [], []
    rows: list[dict] = []
    for n, (shape, data, where) in enumerate(planted):
        text, secret = data.draw(SHAPES[shape])
        assume(not set(secret) <= set("xy"))  # the filler turns hold runs of x and y
        secrets.append(secret)
        texts.append(text)
        if where == 0:
            rows.append({"role": "user", "content": f"用这个：{text} 谢谢"})  # noqa: RUF001
        elif where == 1:
            rows.append({"role": "assistant", "content": f"Using {text} now."})
        else:
            call = f"call_p{n}"
            rows += [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call,
                            "type": "function",
                            "function": {
                                "name": "run_shell",
                                "arguments": json.dumps({"cmd": f"echo {text}"}),
                            },
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": call, "content": f"out: {text}"},
            ]
    services.append_messages(session, rows + [m for n in range(2, 12) for m in turn(n)])
    session.refresh_from_db()
    # A model that writes the secrets out, in their shapes (it never saw them: a bare token
    # without its "Bearer" is not recognisable as one, and is not what this checks).
    model_server.script.default = Reply("## Goal\n" + "\n".join(texts) + " done." * 80)
    before = len(model_server.requests)
    result = compress(session)
    sent = json.dumps([r.body for r in model_server.requests[before:]], ensure_ascii=False)
    summary = result.passes[0].summary
    for secret in secrets:
        assert secret not in sent
        assert summary is None or secret not in summary.content


def test_a_micro_fold_sends_the_turn_masked(
    hermes_config, model_server, gateway, django_capture_on_commit_callbacks
):
    hermes_config(
        auxiliary={"compression": {"model": "fake", "base_url": model_server.base_url}},
        compression={"micro_compact": True, "protect_first_n": 1, "protect_last_n": 4},
    )
    model_server.script.default = Reply("## Goal\nRolling summary of the oldest turns.")
    sid = gateway.open(system_prompt="sys")["id"]
    for n in range(4):  # every turn's ask holds the secrets: whichever folds, they go out
        rows = [{"role": "user", "content": f"keys: {KEY} and {AWS}"}, *turn(n)[1:]]
        with django_capture_on_commit_callbacks(execute=True):
            gateway.post(f"/sessions/{sid}/messages", {"messages": rows})
    assert model_server.requests, "no fold was summarised"
    sent = json.dumps([r.body for r in model_server.requests])
    assert KEY not in sent and AWS not in sent
    assert "[REDACTED:api_key]" in sent
    micro = CompressionEvent.objects.filter(session_id=sid, trigger="micro").first()
    assert micro is not None and micro.redactions["api_key"] >= 1
    assert micro.redactions["aws_key"] >= 1
