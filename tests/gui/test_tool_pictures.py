"""Pictures in the transcript: what a tool returned is shown on its card, also after reopening."""

from __future__ import annotations

import base64
from typing import Any

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
from PySide6.QtGui import QColor, QImage, QPalette
from window_driver import WAIT_MS, send, use_server, wait_idle

from desktop_agent.core.tooling.output import ToolOutput
from desktop_agent.core.tooling.tools import tool
from desktop_agent.testing import script


def _png_uri(width: int, height: int, color: str) -> str:
    image = QImage(width, height, QImage.Format.Format_RGB32)
    image.fill(QColor(color))
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    assert image.save(buffer, "PNG")
    return "data:image/png;base64," + base64.b64encode(bytes(data.data())).decode("ascii")


def _picture_part(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


def _cards(window: Any, name: str) -> list[Any]:
    from desktop_agent.gui.transcript.tool_card import ToolCard

    window.current_tab().transcript.flush()
    return [c for c in window.current_tab().findChildren(ToolCard) if c.tool_name == name]


def test_a_tools_pictures_show_on_its_card_and_open_at_full_size(
        qtbot: Any, make_window: Any, server: Any) -> None:
    from desktop_agent.gui.transcript.picture_strip import PictureViewer

    wide, square = _png_uri(640, 360, "#3366cc"), _png_uri(32, 32, "#cc3333")

    @tool("screenshot", "Take a screenshot", {})
    async def screenshot(args: dict[str, Any]) -> ToolOutput:
        return ToolOutput("captured 2 pictures", [_picture_part(wide), _picture_part(square)])

    window = make_window(tools=[screenshot])
    controller = use_server(window, server)
    controller.update_settings(vision=True)
    server.enqueue(script.tool_calls([("screenshot", {})]), script.text("I see a blue screen."))
    send(qtbot, window, "What is on the screen?")
    qtbot.waitUntil(lambda: bool(window.approvals.pending()), timeout=WAIT_MS)
    qtbot.mouseClick(window.approval_dock.allow_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, controller)

    sent = str(server.requests[1]["messages"])
    assert wide in sent and square in sent  # the model saw them too
    card = _cards(window, "screenshot")[0]
    assert card.output_text.startswith("captured 2 pictures")
    assert card.pictures is not None and (card.pictures.count, card.pictures.shown) == (2, 2)
    assert card.detail_label.text() == "done · 2 pictures"
    assert not card.expanded and card.pictures.isVisible()  # seen without unfolding the card
    thumbnails = card.pictures.thumbnails()
    assert [t.accessibleName() for t in thumbnails] == ["640 × 360 picture", "32 × 32 picture"]
    # a thumbnail is small; a click shows the picture at its own size
    assert thumbnails[0].pixmap().deviceIndependentSize().height() <= 140
    qtbot.mouseClick(thumbnails[0], Qt.MouseButton.LeftButton)
    viewers = [w for w in window.findChildren(PictureViewer) if w.isVisible()]
    assert len(viewers) == 1 and viewers[0].windowTitle() == "640 × 360 picture"
    viewers[0].close()

    # stored with the result, and on the card again when the conversation is reopened
    record_id = controller.conversation_id
    reopened = make_window(tools=[screenshot])
    reopened.open_conversation(record_id)
    qtbot.waitUntil(lambda: bool(_cards(reopened, "screenshot")), timeout=WAIT_MS)
    again = _cards(reopened, "screenshot")[0]
    assert again.pictures is not None and again.pictures.shown == 2


def test_a_picture_that_cannot_be_drawn_is_named_not_fatal(qtbot: Any) -> None:
    from desktop_agent.gui.transcript.picture_strip import PictureStrip
    from desktop_agent.gui.transcript.theme import TranscriptTheme

    # sniffed as PNG (so it was stored), but the rest is not a picture
    broken = "data:image/png;base64," + base64.b64encode(
        b"\x89PNG\r\n\x1a\n" + b"not really").decode("ascii")
    strip = PictureStrip([_png_uri(8, 8, "#00aa00"), broken, "https://example.com/x.png"],
                         TranscriptTheme.from_palette(QPalette()))
    qtbot.addWidget(strip)
    assert (strip.count, strip.shown) == (3, 1)
    assert strip.note is not None and strip.note.text() == "2 pictures that cannot be shown here"


def test_a_picture_scrolled_back_into_view_is_not_decoded_again(
        qtbot: Any, monkeypatch: Any) -> None:
    """An item's widget is rebuilt each time it scrolls back into view: its thumbnails
    come from a small cache, and only opening a picture decodes it at full size."""
    from desktop_agent.gui.transcript import picture_strip
    from desktop_agent.gui.transcript.picture_strip import PictureStrip, PictureViewer
    from desktop_agent.gui.transcript.theme import TranscriptTheme

    decoded: list[str] = []
    real = picture_strip.picture_image
    monkeypatch.setattr(picture_strip, "picture_image",
                        lambda url: decoded.append(url) or real(url))
    url = _png_uri(300, 200, "#884400")
    theme = TranscriptTheme.from_palette(QPalette())
    for _ in range(3):
        strip = PictureStrip([url], theme)
        qtbot.addWidget(strip)
        assert strip.shown == 1
    assert decoded == [url]
    viewer = strip.open_url(url)
    assert viewer is not None and viewer.windowTitle() == "300 × 200 picture"
    assert isinstance(viewer, PictureViewer) and len(decoded) == 2
    viewer.close()
