"""Loopback servers for the tests and the demo: an OpenAI-compatible model (``fake_model``) and a
Codex app server (``fake_codex``). Each runs on its own (``python -m ...``); no production module
imports them.
"""
