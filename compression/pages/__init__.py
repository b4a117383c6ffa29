"""The operator pages: the console's views (``views``) and charts (``charts``), and the admin's
classes (``admin``).

May import everything below them: the agent, the policy, the paths, the engine, the store.
"""
