"""The agent: the turn that calls the chat model (``turn``) and the ACP adapter for editors
(``acp``).

May import: the policy, the paths (a turn calls the Responses API with server-side compaction),
the engine, the store, the app's records, configuration. Never the pages.
"""
