"""hermes_site.granian_app.reads_whole_bodies: what an answer leaves of a request body is read
before the answer goes out (granian drops the connection of a body left unread)."""

from __future__ import annotations

import io
from typing import Any

from hermes_site.granian_app import reads_whole_bodies


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
