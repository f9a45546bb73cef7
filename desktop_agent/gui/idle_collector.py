"""Full garbage collections when the window is idle, not in the middle of a frame.

Why: Python runs a full (generation-2) collection whenever enough objects have
survived the young collections, wherever the program happens to be. A full
collection walks every tracked object made since start-up (the app freezes the
start-up ones after its first paint), and the window keeps making long-lived
objects after that: the turn stack the warm-up imports (about 75,000 objects,
a 40 ms collection of CPU time), conversations, cards. Measured with a
``gc.callbacks`` probe (``bench/diff_render.py``), such collections landed in
the middle of a colouring slice or a streamed reply as 20-50 ms stalls, above
the 16 ms frame budget.

The policy, in :class:`IdleCollector`:

- Automatic full collections are put off (the third threshold is raised to
  :data:`FULL_THRESHOLD`); young collections are left as Python has them: they
  walk only new objects and take well under a millisecond to a few
  milliseconds.
- A full collection runs once the window has been idle for
  :data:`IDLE_SECONDS` (no key, mouse or wheel input and no transcript frame),
  and only if young collections have run since the last one (something may
  have become garbage).
- A full collection runs at least every :data:`MAX_INTERVAL_SECONDS` however
  busy the window is (a reply that streams for minutes), so cyclic garbage
  cannot grow without bound: at worst one collection's stall per interval.
- Once, after the first-input warm-up has loaded the turn stack and the
  lexers, the next idle collection also freezes what survives it
  (:meth:`IdleCollector.freeze_at_next_idle`): those modules live as long as
  the process, and frozen objects are never walked again. Whatever else is
  alive at that moment is frozen too, a one-time and bounded cost: if it later
  becomes cyclic garbage it is not freed.

What was measured instead: keeping the diff's coloured pieces untracked
(``transcript/diff_lines.py``) removed the collections the diff itself caused,
but not those caused by everything else the window makes; the idle collector
moves the rest out of the frames.
"""

from __future__ import annotations

import gc
import logging
import time

from PySide6.QtCore import QEvent, QObject, QTimer

from desktop_agent.gui.transcript.frame_scheduler import seconds_since_last_frame

log = logging.getLogger("desktop_agent.gui.idle_collector")

#: Quiet time (no input, no transcript frame) after which a full collection runs.
IDLE_SECONDS = 2.0
#: Longest time between two full collections, however busy the window is.
MAX_INTERVAL_SECONDS = 60.0
#: How often the collector looks at the clock.
CHECK_INTERVAL_MS = 500
#: Generation-1 collections before Python would run a full one by itself (its
#: default is 10). High enough that it does not in practice; the timer does.
FULL_THRESHOLD = 100_000

_INPUT_EVENTS = frozenset({
    QEvent.Type.KeyPress, QEvent.Type.KeyRelease, QEvent.Type.MouseButtonPress,
    QEvent.Type.MouseButtonRelease, QEvent.Type.MouseMove, QEvent.Type.Wheel,
})


class IdleCollector(QObject):
    """Runs the full garbage collections on a timer, at idle moments (see the module doc).

    Attributes:
        collections: Full collections this collector has run.
        longest_seconds: The longest of them (wall clock), for benchmarks and logs.
    """

    def __init__(self, parent: QObject, *, idle_seconds: float = IDLE_SECONDS,
                 max_interval_seconds: float = MAX_INTERVAL_SECONDS,
                 check_interval_ms: int = CHECK_INTERVAL_MS) -> None:
        """Watch ``parent``'s events (install on the QApplication to see all input)."""
        super().__init__(parent)
        self._idle_seconds = idle_seconds
        self._max_interval = max_interval_seconds
        self._previous_threshold = gc.get_threshold()
        young, middle, _full = self._previous_threshold
        gc.set_threshold(young, middle, FULL_THRESHOLD)
        now = time.monotonic()
        self._last_input = now
        self._last_full = now
        self._freeze_next = False
        self.collections = 0
        self.longest_seconds = 0.0
        parent.installEventFilter(self)
        self._timer = QTimer(self)
        self._timer.setInterval(check_interval_ms)
        self._timer.timeout.connect(self.check)
        self._timer.start()

    def uninstall(self) -> None:
        """Stop, and give Python its own thresholds back."""
        self._timer.stop()
        parent = self.parent()
        if parent is not None:
            parent.removeEventFilter(self)
        gc.set_threshold(*self._previous_threshold)

    def freeze_at_next_idle(self) -> None:
        """Freeze what survives the next idle collection (once the warm-up is done)."""
        self._freeze_next = True

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Note input (never consumed): a person at work is not an idle window."""
        if event.type() in _INPUT_EVENTS:
            self._last_input = time.monotonic()
        return False

    def idle_seconds(self) -> float:
        """Seconds since the last input or transcript frame."""
        return min(time.monotonic() - self._last_input, seconds_since_last_frame())

    def check(self) -> None:
        """Collect if the window is idle and there may be garbage, or if one is overdue."""
        overdue = time.monotonic() - self._last_full >= self._max_interval
        idle = self.idle_seconds() >= self._idle_seconds
        young_ran = gc.get_count()[2] > 0  # generation-1 collections since the last full one
        if overdue or (idle and (young_ran or self._freeze_next)):
            self.collect(freeze=idle and self._freeze_next)

    def collect(self, *, freeze: bool = False) -> None:
        """Run one full collection now (and freeze the survivors if asked)."""
        started = time.perf_counter()
        gc.collect()
        if freeze:
            gc.freeze()
            self._freeze_next = False
        spent = time.perf_counter() - started
        self._last_full = time.monotonic()
        self.collections += 1
        self.longest_seconds = max(self.longest_seconds, spent)
        log.debug("full garbage collection in %.1f ms%s", spent * 1000,
                  " (survivors frozen)" if freeze else "")
