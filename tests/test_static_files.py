"""Static files as deployed: collectstatic through whitenoise gives hashed (cache-busted) and
compressed copies, and the pages link the hashed names (issue: console, static files)."""

from __future__ import annotations

import re

import pytest

from tests.processes import isolated_env, python

CHECK = """
import django; django.setup()
from django.conf import settings
from django.test import Client
from django.contrib.auth import get_user_model
print(settings.STORAGES["staticfiles"]["BACKEND"])
user = get_user_model().objects.create_superuser("op", "", "x" * 20)
client = Client(HTTP_HOST="localhost")
client.force_login(user)
print(client.get("/console/").content.decode())
"""


@pytest.mark.slow
def test_collectstatic_writes_hashed_compressed_files_that_the_pages_use(tmp_path):
    with isolated_env(tmp_path) as env:
        python("manage.py", "collectstatic", "--noinput", "-v0", env=env, timeout=300)
        out = python("-c", CHECK, env=env)
    backend, page = out.split("\n", 1)
    assert backend == "core.storage.StaticStorage"
    static = tmp_path / "static" / "hermes"
    hashed = [p.name for p in static.glob("console.*.css")]
    assert hashed, "no hashed copy of console.css"
    for name in hashed:
        assert (static / f"{name}.gz").exists() or (static / f"{name}.br").exists()
    linked = re.search(r'href="/static/hermes/(console\.[0-9a-f]{12}\.css)"', page)
    assert linked and linked.group(1) in hashed
