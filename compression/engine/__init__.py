"""The engine: one compression of one span of a session.

Owns: choosing the span (``selection``), the summariser's prompt (``prompt``), the model call
(``summarizer``), the local fallback summary (``fallback``), the write-back that archives what a
summary replaces (``archive``), and a run of passes under the session's claim (``compress``).

May import: the store (``sessions_app``), the app's records (``compression.models``,
``compression.events``), configuration. Never the policy, the paths, the agent or the pages: what
it needs from them (the session's threshold, a compactor for a context that lives elsewhere) it
asks through ``compression.engine.hooks``, which the app fills in at start-up.
"""
