"""The sentence front ends show before a command without a sandbox is approved.

Apart from ``sandbox.py`` because the window's approval dock
shows it from its first paint: importing the sandbox's module for one sentence cost
the paint ~10 ms of CPU (its policy classes and the command limits behind them).
"""

from __future__ import annotations

#: What front ends show before the person approves a command that has no sandbox.
UNSANDBOXED_WARNING = "unsandboxed: this command can do anything your account can"
