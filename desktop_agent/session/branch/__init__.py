"""A conversation's active branch: how it reads to the model and the transcript, a page at a time.

Nothing is re-exported here; front ends take names from ``desktop_agent.session``.
"""
