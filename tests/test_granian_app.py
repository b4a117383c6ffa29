"""hermes_site.granian_app: what an answer leaves of a request body is read before the answer goes
out (granian drops the connection of a body left unread), and the application sees a request's
own variables, not the process environment granian merges into them."""

from __future__ import annotations

import io
from typing import Any

from hermes_site.granian_app import reads_whole_bodies, without_process_environment


class Counting(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.reads = 0

    def read(self, size: int | None = -1) -> bytes:
        self.reads += 1
        return super().read(size)


def _refusing(environ: dict[str, Any], start_response: Any):
    """An answer decided from the headers alone, as a refused key's is."""
    start_response("401 Unauthorized", [("Content-Type", "application/json")])
    return [b"{}"]


def _run(environ: dict[str, Any], limit: int = 1024):
    started: list[Any] = []
    answer = reads_whole_bodies(_refusing, limit)(
        environ, lambda status, headers, *exc: started.append((status, headers))
    )
    return started[0], list(answer)


def test_a_body_the_answer_left_unread_is_read_to_its_end_before_the_answer_is_returned():
    body = Counting(b"x" * 200_000)
    (status, headers), answer = _run(
        {"CONTENT_LENGTH": "200000", "wsgi.input": body}, limit=300_000
    )
    assert status.startswith("401") and answer == [b"{}"]
    assert body.tell() == 200_000
    assert ("Connection", "close") not in headers


def test_a_chunked_body_is_read_to_its_end_too():
    body = Counting(b"y" * 5_000)
    _run({"HTTP_TRANSFER_ENCODING": "chunked", "wsgi.input": body}, limit=10_000)
    assert body.tell() == 5_000


def test_a_chunked_body_past_the_limit_is_read_no_further_than_one_byte_past_it():
    body = Counting(b"z" * 500_000)
    _run({"HTTP_TRANSFER_ENCODING": "chunked", "wsgi.input": body}, limit=100_000)
    assert body.tell() == 100_001


def test_a_body_declared_over_the_limit_is_not_read_and_its_answer_closes_the_connection():
    body = Counting(b"x" * 4_096)
    (_, headers), _ = _run({"CONTENT_LENGTH": "4096", "wsgi.input": body}, limit=1_024)
    assert body.reads == 0
    assert ("Connection", "close") in headers


def test_a_request_without_a_body_is_passed_through_untouched():
    body = Counting(b"")
    for environ in ({"wsgi.input": body}, {"CONTENT_LENGTH": "0", "wsgi.input": body}):
        (status, headers), _ = _run(environ)
        assert status.startswith("401") and ("Connection", "close") not in headers
    assert body.reads == 0


def test_a_client_gone_mid_body_still_gets_the_application_s_answer_and_no_error():
    """Reading the rest is best effort: the answer stands if the body cannot be read (granian
    drops the connection then anyway)."""

    class Gone(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            raise OSError("the client closed the connection")

    (status, _), answer = _run({"CONTENT_LENGTH": "100", "wsgi.input": Gone()})
    assert status.startswith("401") and answer == [b"{}"]


def _seen(environ: dict[str, Any], inherited: dict[str, str]) -> dict[str, Any]:
    """What the application is handed of ``environ`` (granian's: the environment, then the
    request's scope over it)."""
    handed: list[dict[str, Any]] = []

    def app(environ: dict[str, Any], start_response: Any):
        handed.append(dict(environ))
        return [b""]

    without_process_environment(app, inherited)(inherited | environ, lambda *a: None)
    return handed[0]


SERVER_ENVIRONMENT = {
    "PATH": "/usr/bin",
    "HERMES_DATABASE_URL": "postgres://hermes:secret@db/hermes",
    "HTTP_PROXY": "http://proxy.internal:3128",
    "HTTP_AUTHORIZATION": "Bearer hm_abc_secret",
    "PATH_INFO": "/",
}


def test_the_server_s_environment_is_not_among_a_request_s_variables():
    seen = _seen(
        {"REQUEST_METHOD": "GET", "PATH_INFO": "/api/v1/search", "HTTP_HOST": "h"},
        SERVER_ENVIRONMENT,
    )
    assert seen == {"REQUEST_METHOD": "GET", "PATH_INFO": "/api/v1/search", "HTTP_HOST": "h"}


def test_a_variable_named_as_a_header_is_no_header_but_the_client_s_own_header_is_kept():
    seen = _seen({"HTTP_AUTHORIZATION": "Bearer hm_mine"}, SERVER_ENVIRONMENT)
    assert seen["HTTP_AUTHORIZATION"] == "Bearer hm_mine"
    assert "HTTP_PROXY" not in seen


def test_what_the_request_s_scope_always_sets_is_kept_even_where_it_equals_the_environment():
    seen = _seen({"REQUEST_METHOD": "GET", "PATH_INFO": "/"}, SERVER_ENVIRONMENT)
    assert seen == {"REQUEST_METHOD": "GET", "PATH_INFO": "/"}


def test_a_header_exactly_equal_to_the_same_named_variable_is_dropped_with_it():
    """The one case the two cannot be told apart (granian's merge leaves no trace of which
    wrote the value): the docstring's stated cost."""
    seen = _seen({"HTTP_PROXY": "http://proxy.internal:3128"}, SERVER_ENVIRONMENT)
    assert "HTTP_PROXY" not in seen
