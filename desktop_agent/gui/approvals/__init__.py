"""Tool-call approvals: the queue across tabs, the dock, the gate (the window badges tabs)."""
