"""A turn: starting it, running it, recording it, and how its store calls run.

Nothing is re-exported here: front ends take names from ``desktop_agent.session``,
and importing this package must not load the turn's modules (the core client,
pydantic) before a turn needs them.
"""
