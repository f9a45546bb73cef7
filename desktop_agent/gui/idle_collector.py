"""Full garbage collections when the window is idle, not in the middle of a frame.

Why: Python runs a full (generation-2) collection whenever enough objects have
survived the young collections, wherever the program happens to be. A full
collection walks every tracked object made since start-up (the app freezes the
start-up ones after its first paint), and the window keeps making long-lived
objects after that: the turn stack the first-input warm-up imports (about
75,000 objects: a full collection over them took 45 ms of CPU), conversations,
cards. ``bench/diff_render.py`` (a ``gc.callbacks`` probe) saw full
collections of 20-90 ms land in the middle of a diff's colouring slices, above
the 16 ms frame budget.

What each measure did, measured there (CPU time, on a shared 2-core machine):

- Keeping a diff's coloured pieces as flat tuples of text and numbers
  (``transcript/diff_lines.py``), which the collector stops tracking: in a
  process with only its start-up objects, the full collections while a
  rewritten 10,000-line file was coloured went from 3 (up to 86 ms wall) to
  none. The diff no longer makes work for the collector.
- But the app also holds what its first-input warm-up loaded. With that loaded
  and only the start-up objects frozen (``--gc startup-freeze``), full
  collections still came inside colouring slices, 45-55 ms each, with the flat
  pieces. Freezing what the warm-up loaded took a full collection from 45 ms
  to under 1 ms, and this collector moved the rest out of the frames: with
  the app's handling none ran during the slices, which stayed under 7 ms.

The policy, in :class:`IdleCollector`:

- Automatic full collections are put off (the third threshold is raised to
  :data:`FULL_THRESHOLD`); young collections are left as Python has them: they
  walk only new objects and take well under a millisecond to a few.
- A full collection runs once the window has been idle for
  :data:`IDLE_SECONDS` (no key, mouse or wheel input and no transcript frame),
  and only if young collections have run since the last one (something may
  have become garbage).
- A full collection runs at least every :data:`MAX_INTERVAL_SECONDS` however
  busy the window is (a reply that streams for minutes), so cyclic garbage
  cannot grow without bound: at worst one collection's stall per interval.
- Once, after the first-input warm-up, the next idle collection also freezes
  what survives it (:meth:`IdleCollector.freeze_at_next_idle`): those modules
  live as long as the process, and frozen objects are never walked again.
  Whatever else is alive at that moment is frozen too, a one-time, bounded
  cost: if it later becomes cyclic garbage it is not freed.
- Input is watched (an application event filter) only while a collection is
  wanted and no frames run: a Python filter on every event of the application
  halved the events Qt could deliver per second (about 6 µs each), which a
  streaming reply would pay all the time.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QTimer

from desktop_agent.gui.transcript.frame_scheduler import last_frame_at

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
        watching: Whether input is being watched now (a collection is wanted).
    """

    def __init__(self, parent: QObject, *, idle_seconds: float = IDLE_SECONDS,
                 max_interval_seconds: float = MAX_INTERVAL_SECONDS,
                 check_interval_ms: int = CHECK_INTERVAL_MS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """Collect for ``parent`` (the QApplication: its event filter sees all input)."""
        super().__init__(parent)
        self._app = parent
        self._idle_seconds = idle_seconds
        self._max_interval = max_interval_seconds
        self._clock = clock
        self._previous_threshold = gc.get_threshold()
        young, middle, _full = self._previous_threshold
        gc.set_threshold(young, middle, FULL_THRESHOLD)
        now = clock()
        self._quiet_since = now  # last input seen, or when watching began
        self._last_full = now
        self._freeze_next = False
        self.watching = False
        self.collections = 0
        self.longest_seconds = 0.0
        self._timer = QTimer(self)
        self._timer.setInterval(check_interval_ms)
        self._timer.timeout.connect(self.check)
        self._timer.start()

    def uninstall(self) -> None:
        """Stop, and give Python its own thresholds back."""
        self._timer.stop()
        self._watch(False)
        gc.set_threshold(*self._previous_threshold)

    def freeze_at_next_idle(self) -> None:
        """Freeze what survives the next idle collection (once the warm-up is done)."""
        self._freeze_next = True

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Note input (never consumed): a person at work is not an idle window."""
        if event.type() in _INPUT_EVENTS:
            self._quiet_since = self._clock()
        return False

    def check(self) -> None:
        """Collect if the window has been idle and there may be garbage, or if one is overdue."""
        now = self._clock()
        if now - self._last_full >= self._max_interval:
            self.collect(freeze=False)
            return
        wanted = self._freeze_next or gc.get_count()[2] > 0  # gen-1 runs since the last full
        framing = now - last_frame_at() < self._idle_seconds
        if not wanted or framing:
            self._watch(False)  # frames say "busy" already; nothing to collect otherwise
            return
        if not self.watching:
            self._watch(True)
            return
        if now - max(self._quiet_since, last_frame_at()) >= self._idle_seconds:
            self.collect(freeze=self._freeze_next)

    def collect(self, *, freeze: bool = False) -> None:
        """Run one full collection now (and freeze the survivors if asked)."""
        started = time.perf_counter()
        gc.collect()
        if freeze:
            gc.freeze()
            self._freeze_next = False
        spent = time.perf_counter() - started
        self._last_full = self._clock()
        self._watch(False)
        self.collections += 1
        self.longest_seconds = max(self.longest_seconds, spent)
        log.debug("full garbage collection in %.1f ms%s", spent * 1000,
                  " (survivors frozen)" if freeze else "")

    def _watch(self, on: bool) -> None:
        if on == self.watching:
            return
        self.watching = on
        if on:
            self._quiet_since = self._clock()
            self._app.installEventFilter(self)
        else:
            self._app.removeEventFilter(self)
