"""A turn: what starts it, the task that runs it, its record, its client and its options.

Nothing is re-exported here: front ends take names from ``desktop_agent.session``,
and importing this package must not load the turn's modules (the core client,
pydantic) before a turn needs them.
"""
