"""Render the app icon from its SVG source into every size and format the platforms need.

Run it after editing ``resources/icons/desktop-agent.svg``; the outputs are committed so
that building the binary needs no image tools::

    QT_QPA_PLATFORM=offscreen python3 packaging/render_icons.py

It writes ``desktop-agent-<size>.png`` (16..512) for Linux desktops and the window,
``desktop-agent.ico`` for Windows (PNG entries, Vista and later) and
``desktop-agent.icns`` for macOS. Only Qt (QtSvg) is used, so no extra dependency.
"""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRectF, Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

ICON_DIR = Path(__file__).resolve().parent.parent / "resources" / "icons"
SOURCE = ICON_DIR / "desktop-agent.svg"
PNG_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
# Apple's PNG-carrying icns element types and the pixel size each holds.
ICNS_TYPES = (
    (b"icp4", 16),
    (b"icp5", 32),
    (b"icp6", 64),
    (b"ic07", 128),
    (b"ic08", 256),
    (b"ic09", 512),
    (b"ic11", 32),
    (b"ic12", 64),
    (b"ic13", 256),
    (b"ic14", 512),
)


def render_png(renderer: QSvgRenderer, size: int) -> bytes:
    """Render the SVG at ``size`` x ``size`` pixels and return PNG bytes."""
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    renderer.render(painter, QRectF(0, 0, size, size))
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buffer, "PNG"):
        raise RuntimeError(f"could not encode the {size}px icon as PNG")
    return bytes(data.data())


def build_ico(pngs: dict[int, bytes]) -> bytes:
    """Pack PNG images into a Windows .ico (ICONDIR + ICONDIRENTRY table + images)."""
    header = struct.pack("<HHH", 0, 1, len(ICO_SIZES))
    offset = len(header) + 16 * len(ICO_SIZES)
    entries, images = b"", b""
    for size in ICO_SIZES:
        data = pngs[size]
        side = 0 if size >= 256 else size  # 0 means 256 in the directory entry.
        entries += struct.pack("<BBBBHHII", side, side, 0, 0, 1, 32, len(data), offset)
        images += data
        offset += len(data)
    return header + entries + images


def build_icns(pngs: dict[int, bytes]) -> bytes:
    """Pack PNG images into a macOS .icns (a big-endian list of typed, sized elements)."""
    body = b"".join(
        kind + struct.pack(">I", 8 + len(pngs[size])) + pngs[size] for kind, size in ICNS_TYPES
    )
    return b"icns" + struct.pack(">I", 8 + len(body)) + body


def main() -> int:
    app = QGuiApplication(sys.argv[:1])  # QImage text/paint support needs an application.
    renderer = QSvgRenderer(str(SOURCE))
    if not renderer.isValid():
        sys.stderr.write(f"cannot read {SOURCE}\n")
        return 1
    pngs = {size: render_png(renderer, size) for size in sorted({*PNG_SIZES, *ICO_SIZES})}
    for size in PNG_SIZES:
        (ICON_DIR / f"desktop-agent-{size}.png").write_bytes(pngs[size])
    (ICON_DIR / "desktop-agent.ico").write_bytes(build_ico(pngs))
    (ICON_DIR / "desktop-agent.icns").write_bytes(build_icns(pngs))
    sys.stdout.write(f"wrote {len(PNG_SIZES)} PNGs, .ico and .icns to {ICON_DIR}\n")
    del app
    return 0


if __name__ == "__main__":
    sys.exit(main())
