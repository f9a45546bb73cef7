"""Tool calls asked about and settled: the approval broker, and a settled call's state.

Nothing is re-exported here; front ends take names from ``desktop_agent.session``.
"""
