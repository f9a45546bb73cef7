"""How the Models window writes a model's facts: sizes, counts, the fit badge.

Why apart from the widgets: the table, the details panel and the download list
write the same facts, and one spelling keeps them from drifting (``1.1 GB``,
``8,192``, ``Q4_K_M``). Nothing here decides anything: the engine judged the fit,
this only names its verdict and picks the palette colour for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from desktop_agent.engine import FitEstimate, LibraryEntry
    from desktop_agent.gui.palette import Palette

DASH = "—"


def size_text(size: int | None) -> str:
    """``1.1 GB``, ``397 MB``: decimal units, as the hub and file managers write them."""
    if size is None:
        return DASH
    if size < 1_000_000:
        return f"{size / 1000:.0f} kB"
    if size < 1_000_000_000:
        return f"{size / 1_000_000:.0f} MB"
    return f"{size / 1_000_000_000:.1f} GB"


def speed_text(bytes_per_second: float | None) -> str:
    """``12.3 MB/s``, or empty while there is no measurement."""
    if not bytes_per_second:
        return ""
    if bytes_per_second < 1_000_000:
        return f"{bytes_per_second / 1000:.0f} kB/s"
    return f"{bytes_per_second / 1_000_000:.1f} MB/s"


def time_left_text(seconds: float | None) -> str:
    """``2 min 05 s left``, ``40 s left``, or empty when unknown."""
    if seconds is None:
        return ""
    whole = round(seconds)
    if whole >= 3600:
        return f"{whole // 3600} h {whole % 3600 // 60:02d} min left"
    if whole >= 60:
        return f"{whole // 60} min {whole % 60:02d} s left"
    return f"{whole} s left"


def count_text(value: int | None) -> str:
    """``8,192``, or a dash when unknown."""
    return f"{value:,}" if value else DASH


def parameter_count_text(count: int) -> str:
    """``1.7B``, ``596M``: how model pages write a parameter count."""
    return f"{count / 1e9:.1f}B" if count >= 1e9 else f"{count / 1e6:.0f}M"


def parameters_text(entry: LibraryEntry) -> str:
    """``1.7B``: the header's size label, else a dash."""
    return entry.info.size_label or DASH if entry.info is not None else DASH


def quantisation_text(entry: LibraryEntry) -> str:
    """``Q4_K_M``, ``F16``..."""
    return entry.info.quantization or DASH if entry.info is not None else DASH


def context_text(entry: LibraryEntry) -> str:
    """The context it was trained for."""
    return count_text(entry.info.context_length if entry.info is not None else None)


def tools_text(entry: LibraryEntry) -> str:
    """A tick when its chat template offers tools; a dash when not; blank when unreadable."""
    if entry.info is None:
        return ""
    return "✓" if entry.info.supports_tools else DASH


def fit_label(fit: FitEstimate | None, problem: str | None = None) -> str:
    """The badge's word: ``Fits``, ``Tight``, ``Too big``, ``Unknown`` or ``Can't use``."""
    if problem is not None:
        return "Can't use"
    if fit is None:
        return "Unknown"
    return {"fits": "Fits", "tight": "Tight", "too_big": "Too big"}.get(
        fit.verdict.value, "Unknown")


def fit_colour(label: str, colours: Palette) -> str:
    """The palette colour of a badge word (green fits, amber tight, red too big)."""
    return {"Fits": colours.success, "Tight": colours.warning, "Too big": colours.danger,
            "Can't use": colours.danger}.get(label, colours.muted)


def fit_tip(entry: LibraryEntry) -> str:
    """The sentence behind the badge (needed memory against free, or what is wrong)."""
    if entry.problem is not None:
        return entry.problem
    return entry.fit.sentence if entry.fit is not None else ""

