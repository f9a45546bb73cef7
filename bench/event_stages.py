"""Where an event's time goes inside ``serve``: loaded into it by ``server_load.py --stages``.

Not part of the server: ``server_load.py`` puts a ``sitecustomize`` on the
server's path that calls :func:`install`, which wraps three of the event
path's methods to take each event's age (from its append, ``created_at``)
when the writer thread starts the commit holding it, when the loop takes the
commit in (``EventLog._committed``) and when its SSE frame is built
(``Event.sse_frame``), and writes their percentiles to the file named by
``DESKTOP_AGENT_STAGES_FILE`` as the process exits (or is stopped by SIGTERM). The wrapping costs a
little CPU per event; a run with ``--stages`` is for reading the split, not
for comparing totals with a run without it.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import time
from typing import Any

STAGES = ("writer took it", "loop took the commit in", "SSE frame built")


def install() -> None:
    """Wrap the event path's methods (see the module docstring)."""
    from desktop_agent.server import event_log, event_record, event_writer

    ages: dict[str, list[float]] = {stage: [] for stage in STAGES}
    taken, seen, framed = (ages[stage] for stage in STAGES)

    write = event_writer.EventWriter._write

    def timed_write(self: Any, batch: list[Any]) -> None:
        now = time.time()
        taken.extend(now - item.new.created_at for item in batch
                     if isinstance(item, event_writer.Pending))
        write(self, batch)

    committed = event_log.EventLog._committed

    def timed_committed(self: Any, written: list[Any], others: list[str]) -> None:
        now = time.time()
        seen.extend(now - stored.created_at for stored, _ in written)
        committed(self, written, others)

    frame = event_record.Event.sse_frame

    def timed_frame(self: Any) -> bytes:
        framed.append(time.time() - self.created_at)
        return frame(self)

    event_writer.EventWriter._write = timed_write  # type: ignore[method-assign]
    event_log.EventLog._committed = timed_committed  # type: ignore[method-assign]
    event_record.Event.sse_frame = timed_frame  # type: ignore[method-assign]
    path = os.environ["DESKTOP_AGENT_STAGES_FILE"]
    atexit.register(_dump, ages, path)

    def on_terminate(signum: int, _frame: object) -> None:  # the bench stops serve this way
        _dump(ages, path)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    signal.signal(signal.SIGTERM, on_terminate)


def _dump(ages: dict[str, list[float]], path: str) -> None:
    figures: dict[str, dict[str, float]] = {}
    for stage, values in ages.items():
        ordered = sorted(values)
        if ordered:
            figures[stage] = {"events": len(ordered), **{
                name: ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] * 1000
                for name, fraction in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))}}
    with open(path, "w", encoding="utf-8") as out:
        json.dump(figures, out)


def read(path: str) -> list[str]:
    """The lines ``server_load.py`` prints for a stages file (none when it was not written)."""
    try:
        with open(path, encoding="utf-8") as found:
            figures = json.load(found)
    except (OSError, ValueError):
        return ["  (the server wrote no stage figures)"]
    return [f"  {stage}: p50 {row['p50']:.2f} ms, p90 {row['p90']:.2f} ms, "
            f"p99 {row['p99']:.2f} ms ({row['events']} events)"
            for stage in STAGES if (row := figures.get(stage))]
