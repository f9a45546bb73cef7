"""A conversation's life as a whole: created with its folder, held by one session, deleted.

Nothing is re-exported here; front ends take names from ``desktop_agent.session``.
"""
