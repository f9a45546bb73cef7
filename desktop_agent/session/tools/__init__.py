"""Which tools a conversation offers: the catalog, ``config.json``, the plan tool.

``config.json`` names the MCP servers and holds the global permission rules.
Nothing is re-exported here; front ends take names from ``desktop_agent.session``.
"""
