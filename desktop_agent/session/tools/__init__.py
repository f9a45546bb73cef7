"""Which tools a conversation offers and how: the catalog, ``config.json``, the plan tool.

Nothing is re-exported here; front ends take names from ``desktop_agent.session``.
"""
