"""The person's choices for the engine, kept with the app's other settings in the store.

Folders they added to the library, how long an unused model stays loaded, whether
several models may run at once, and the run settings they edited for a model
(context, threads, slots, GPU layers, template), by the model file's path. They live
in the store's app settings (one JSON value), so the window and ``serve`` on the
same data folder share them, and an export of the data folder carries them along.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desktop_agent.engine.run_settings import RunSettings

if TYPE_CHECKING:
    from desktop_agent.store import Store

log = logging.getLogger("desktop_agent.session.local_engine")

PREFERENCES_KEY = "local_engine"
"""The app setting holding the preferences."""
DEFAULT_IDLE_UNLOAD_MINUTES = 30.0
_RUN_FIELDS = tuple(f.name for f in dataclasses.fields(RunSettings))


@dataclass(frozen=True)
class EnginePreferences:
    """What the person chose for the engine.

    Attributes:
        folders: Folders they added to the library (searched besides LM Studio's,
            Ollama's, Hugging Face's and llama.cpp's).
        idle_unload_minutes: Minutes without use after which a model is unloaded
            (its memory back to the system); None: never.
        one_at_a_time: Running a model stops the one running (the usual choice: two
            models rarely fit in a laptop's memory).
        run_settings: Edited run settings by model file path (absolute, as a string).
    """

    folders: tuple[Path, ...] = ()
    idle_unload_minutes: float | None = DEFAULT_IDLE_UNLOAD_MINUTES
    one_at_a_time: bool = True
    run_settings: Mapping[str, RunSettings] = field(default_factory=dict)

    def settings_for(self, model: Path) -> RunSettings:
        """The run settings for ``model``: the person's, else all chosen at start."""
        return self.run_settings.get(str(model), RunSettings())

    def with_settings_for(self, model: Path, settings: RunSettings | None) -> EnginePreferences:
        """A copy with ``model``'s run settings replaced (None: back to the defaults)."""
        edited = dict(self.run_settings)
        if settings is None or settings == RunSettings():
            edited.pop(str(model), None)
        else:
            edited[str(model)] = settings
        return dataclasses.replace(self, run_settings=edited)

    @property
    def idle_unload_seconds(self) -> float | None:
        """:attr:`idle_unload_minutes` in seconds, as the running models take it."""
        return None if self.idle_unload_minutes is None else self.idle_unload_minutes * 60

    def to_json(self) -> dict[str, Any]:
        """The JSON value stored."""
        return {"folders": [str(folder) for folder in self.folders],
                "idle_unload_minutes": self.idle_unload_minutes,
                "one_at_a_time": self.one_at_a_time,
                "run_settings": {path: {name: getattr(settings, name) for name in _RUN_FIELDS
                                        if getattr(settings, name) != getattr(RunSettings(), name)}
                                 for path, settings in self.run_settings.items()}}

    @classmethod
    def from_json(cls, data: Any) -> EnginePreferences:
        """Read a stored value; what does not make sense is left at its default (logged)."""
        if not isinstance(data, Mapping):
            return cls()
        idle = data.get("idle_unload_minutes", DEFAULT_IDLE_UNLOAD_MINUTES)
        folders = data.get("folders")
        return cls(
            folders=tuple(Path(folder) for folder in folders if isinstance(folder, str))
            if isinstance(folders, list) else (),
            idle_unload_minutes=float(idle) if isinstance(idle, int | float)
            and not isinstance(idle, bool) and idle > 0 else None,
            one_at_a_time=data.get("one_at_a_time") is not False,
            run_settings=_run_settings(data.get("run_settings")))


def _run_settings(data: Any) -> dict[str, RunSettings]:
    kept: dict[str, RunSettings] = {}
    for path, values in (data.items() if isinstance(data, Mapping) else ()):
        if not isinstance(values, Mapping):
            continue
        try:
            kept[str(path)] = RunSettings(**{k: v for k, v in values.items() if k in _RUN_FIELDS})
        except (TypeError, ValueError) as error:
            log.info("Ignoring the stored run settings of %s: %s", path, error)
    return kept


def load_preferences(store: Store) -> EnginePreferences:
    """The stored preferences (defaults when none are stored). Blocking."""
    return EnginePreferences.from_json(store.get_setting(PREFERENCES_KEY))


def save_preferences(store: Store, preferences: EnginePreferences) -> None:
    """Store the preferences. Blocking."""
    store.set_setting(PREFERENCES_KEY, preferences.to_json())
