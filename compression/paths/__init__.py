"""The other ways a context shrinks.

Owns: proactive pruning of tool output (``pruning``), micro-compaction into a rolling summary
(``micro``), OpenAI server-side compaction (``server_compaction``) and Codex app-server
compaction (``codex``).

May import: the engine, the store, the app's records, configuration. Never the policy (the
threshold a path needs is passed in), the agent or the pages.
"""
