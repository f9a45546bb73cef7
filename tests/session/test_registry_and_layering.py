"""The registry closes idle sessions; the session layer imports neither Qt nor FastAPI."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

from desktop_agent.session.lifecycle.registry import SessionRegistry


@dataclass
class Held:
    name: str
    last_used: float
    busy: bool = False
    closed: bool = False

    def can_evict(self) -> bool:
        return not self.busy

    async def close(self) -> None:
        self.closed = True


async def test_idle_sessions_beyond_the_limit_are_closed_oldest_first() -> None:
    made: dict[str, Held] = {}
    clock = iter(range(100))

    def factory(cid: str) -> Held:
        made[cid] = Held(cid, float(next(clock)), busy=cid == "busy")
        return made[cid]

    registry = SessionRegistry(factory, max_idle=2)
    for cid in ("busy", "a", "b", "c", "d"):
        registry.get(cid)
    assert sorted(cid for cid in made if registry.peek(cid) is not None) == ["b", "busy", "c",
                                                                               "d"]
    assert len(registry) == 4
    registry.get("e")
    assert registry.peek("b") is None  # the oldest idle one went
    assert registry.peek("busy") is not None  # a running turn is never evicted
    await registry.close()
    assert all(h.closed for h in made.values())


def test_the_session_layer_imports_no_qt_and_no_fastapi() -> None:
    code = ("import sys; import desktop_agent.session.conversation, "
            "desktop_agent.session.lifecycle.registry, desktop_agent.session.lifecycle.deletion; "
            "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('PySide6', 'shiboken6', 'qasync', 'fastapi', 'starlette', 'uvicorn') "
            "or m.startswith(('desktop_agent.gui', 'desktop_agent.server')))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == ""
