"""The API's JSON is written by orjson, and by the standard library where orjson refuses: either
way an answer reads as the standard library with django-ninja's encoder would have written it."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import uuid
from decimal import Decimal

import pytest
from ninja.responses import NinjaJSONEncoder

from core.answers import readable_json
from sessions_app.models import Message


@dataclasses.dataclass
class Hit:
    id: int
    at: dt.datetime


AT = dt.datetime(2026, 12, 4, 20, 30, 1, 123456, tzinfo=dt.UTC)
ANSWERS = {
    "plain": {"q": "部署 deploy 🙂", "n": 3, "x": 0.1, "ok": True, "none": None, "list": [1, "a"]},
    "dates": {"at": AT, "day": AT.date(), "naive": AT.replace(tzinfo=None)},
    "ids and numbers": {"id": uuid.UUID(int=7), "cost": Decimal("0.0300"), "big": 2**63 - 1},
    "choices and keys": {"role": Message.Role.TOOL, 3: "int key", "tuple": (1, 2)},
    "an integer past 64 bits": {"big": 2**70, "neg": -(2**63) - 1},
    "a lone surrogate": {"text": "half \ud800 a pair"},
    "deep nesting": {"deep": json.loads("[" * 300 + "]" * 300)},
}


@pytest.mark.parametrize("kind", ANSWERS)
def test_an_answer_reads_as_the_standard_library_would_have_written_it(kind):
    data = ANSWERS[kind]

    written = readable_json(data, NinjaJSONEncoder)

    assert json.loads(written) == json.loads(json.dumps(data, cls=NinjaJSONEncoder))


def test_chinese_and_emoji_are_written_as_utf8_not_escaped():
    written = readable_json(ANSWERS["plain"])

    assert "部署 deploy 🙂".encode() in written and b"\\u" not in written


def test_a_lone_surrogate_keeps_its_escape_rather_than_failing():
    written = readable_json(ANSWERS["a lone surrogate"])

    assert b"\\ud800" in written and written.isascii()


@pytest.mark.parametrize(
    ("data", "encoder"), [({"at": AT}, None), ({"hit": Hit(1, AT)}, NinjaJSONEncoder)]
)
def test_what_the_encoder_cannot_write_fails_as_the_standard_library_fails(data, encoder):
    with pytest.raises(TypeError):
        json.dumps(data, cls=encoder)
    with pytest.raises(TypeError):
        readable_json(data, encoder)
