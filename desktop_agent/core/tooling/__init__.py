"""Tools and what happens around a call: permission, hooks, approval, running, results.

``tools`` declares them (``@tool``), ``run_call`` runs one call through the
permission check and the hooks, ``run_round`` runs the calls of one reply,
``pool`` holds a turn's tools, ``builtin/`` the sandboxed working-folder tools
and ``mcp/`` the MCP servers' tools.
"""
