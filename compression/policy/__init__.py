"""The policy: when to compress.

Owns: the token threshold (``threshold``), the triggers that decide on every append and turn
(``triggers``), gateway hygiene and the turn hold (``hygiene``), model-error triggers and the
exhaustion reset (``recovery``), the failure guards (``guards``), when the lighter paths are
due (``due``), and the plug-in interface for context engines (``plugins``).

May import: the engine, the store, the app's records, configuration. Never the paths, the agent
or the pages: pruning is run through ``compression.policy.hooks`` and queued tasks by name.
"""
