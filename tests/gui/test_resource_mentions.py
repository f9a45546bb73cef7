"""``@server:name`` in the composer: MCP resources and templates, against server-everything."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tier_policy import part_missing
from window_driver import WAIT_MS, use_server, wait_idle

from desktop_agent.testing import script

EVERYTHING = Path(__file__).parents[2] / ".mcp-servers" / "node_modules" / ".bin" \
    / "mcp-server-everything"
SLOW_MS = 120_000  # node starts the server on the first '@'


def _window(make_window: Any, server: Any, data_dir: Path, tmp_path: Path) -> Any:
    if not EVERYTHING.exists():
        part_missing(f"{EVERYTHING} not found (bash .ci/install_mcp_servers.sh)")
    (data_dir / "config.json").write_text(json.dumps(
        {"mcpServers": {"ev": {"command": str(EVERYTHING)}}}), encoding="utf-8")
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "evening.txt").write_text("a file", encoding="utf-8")
    window = make_window()
    controller = use_server(window, server)
    controller.update_settings(workdir=str(folder), tools=[])
    return window, controller


def test_a_resource_is_offered_beside_the_files_and_attached_as_text(
        qtbot: Any, make_window: Any, server: Any, data_dir: Path, tmp_path: Path) -> None:
    from PySide6.QtCore import Qt

    window, controller = _window(make_window, server, data_dir, tmp_path)
    tab = window.current_tab()
    mentions = tab.file_mentions
    tab.composer.setFocus()
    qtbot.keyClicks(tab.composer, "Summarise @ev")
    qtbot.waitUntil(lambda: "ev:architecture.md" in mentions.offered(), timeout=SLOW_MS)
    offered = mentions.offered()
    # the letters name a server: its resources lead, the file that matches follows
    assert offered[-1] == "evening.txt" and offered.index("ev:architecture.md") < len(offered) - 1
    assert "ev:Dynamic Text Resource…" in offered  # a template, asked before it is read

    qtbot.keyClicks(tab.composer, ":archi")
    qtbot.waitUntil(lambda: mentions.offered()[:1] == ["ev:architecture.md"], timeout=WAIT_MS)
    qtbot.keyClick(mentions.completer.popup(), Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: bool(tab.attachments), timeout=WAIT_MS)
    [attached] = tab.attachments
    assert attached.name == "ev:architecture.md" and attached.text
    assert attached.source is not None and attached.source.startswith("demo://")
    assert tab.composer.toPlainText() == "Summarise "

    server.enqueue(script.text("It is about the server's layout."))
    qtbot.keyClick(tab.composer, Qt.Key.Key_Return)
    wait_idle(qtbot, controller)
    sent = str(server.requests[-1]["messages"][-1]["content"])
    assert f"ev:architecture.md ({attached.source}):" in sent and attached.text[:40] in sent


def test_a_template_asks_its_parameter_with_the_servers_suggestions(
        qtbot: Any, make_window: Any, server: Any, data_dir: Path, tmp_path: Path) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QLabel

    window, _controller = _window(make_window, server, data_dir, tmp_path)
    tab = window.current_tab()
    mentions = tab.file_mentions
    tab.composer.setFocus()
    qtbot.keyClicks(tab.composer, "@ev:dyntext")
    qtbot.waitUntil(lambda: mentions.offered()[:1] == ["ev:Dynamic Text Resource…"],
                    timeout=SLOW_MS)
    qtbot.keyClick(mentions.completer.popup(), Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: tab.resource_attaching.form is not None, timeout=WAIT_MS)
    form = tab.resource_attaching.form
    assert form.isVisible() and list(form.fields) == ["resourceId"]
    field = form.fields["resourceId"]
    assert not form.buttons.buttons()[0].isEnabled()  # nothing typed: nothing to read
    field.setFocus()
    qtbot.keyClicks(field, "1")
    qtbot.waitUntil(lambda: form.suggestions["resourceId"].stringList() != [], timeout=WAIT_MS)
    assert "1" in form.suggestions["resourceId"].stringList()
    assert form.uri.text() == "Reads demo://resource/dynamic/text/1"
    form.buttons.accepted.emit()
    qtbot.waitUntil(lambda: bool(tab.attachments), timeout=WAIT_MS)
    [attached] = tab.attachments
    assert attached.source == "demo://resource/dynamic/text/1" and attached.text
    assert not tab.composer.toPlainText()

    # a blob of text (base64 on the wire) is attached as its text
    tab.resource_attaching.attach("ev", "demo://resource/dynamic/blob/2")
    qtbot.waitUntil(lambda: len(tab.attachments) == 2, timeout=WAIT_MS)
    assert "base64 blob" in (tab.attachments[1].text or "")
    assert [c.text() for c in tab.composer_box.chips.findChildren(QLabel, "attachmentChip")
            ] == ["ev:Dynamic Text Resource 1", tab.attachments[1].name]


def test_binary_content_is_named_and_a_picture_goes_as_a_picture() -> None:
    from desktop_agent.core.tooling.mcp.mcp_items import ResourceContent
    from desktop_agent.gui.conversation.attachments import (
        message_content,
        resource_attachment,
    )

    blob = resource_attachment("ev", ResourceContent("demo://x.bin", "x.bin",
                                                     "application/zip", size=2048))
    picture = resource_attachment("ev", ResourceContent(
        "demo://p.png", "p.png", "image/png", image_url="data:image/png;base64,iVBO", size=4))
    content = message_content("Look", [blob, picture])
    assert isinstance(content, list)
    assert content[0]["text"] == ("Look\n\nev:x.bin (demo://x.bin): [application/zip, 2,048 "
                                  "bytes: not included, only named]")
    assert content[1] == {"type": "image_url",
                          "image_url": {"url": "data:image/png;base64,iVBO"}}


def test_an_attached_resource_that_changed_is_read_again_and_the_reply_says_so(
        qtbot: Any, make_window: Any, server: Any, data_dir: Path, tmp_path: Path) -> None:
    import asyncio

    from PySide6.QtWidgets import QLabel

    window, controller = _window(make_window, server, data_dir, tmp_path)
    tab = window.current_tab()
    uri = "demo://resource/dynamic/text/1"
    tab.resource_attaching.attach("ev", uri)  # subscribes to its changes too
    qtbot.waitUntil(lambda: bool(tab.attachments), timeout=SLOW_MS)
    server.enqueue(script.text("Read."), script.text("Read again."))
    tab.composer.setPlainText("Read this")
    tab.send()
    wait_idle(qtbot, controller)

    async def start_updates() -> Any:
        pool = await window.tools.mcp_pool()
        await pool.call_tool("ev", "toggle-subscriber-updates", {})
        return pool

    started = asyncio.ensure_future(start_updates())
    qtbot.waitUntil(started.done, timeout=WAIT_MS)
    # server-everything says a subscribed resource changed every few seconds
    side = started.result()._connection("ev").client_side
    qtbot.waitUntil(lambda: uri in side.updated, timeout=SLOW_MS)

    tab.composer.setPlainText("And now?")
    tab.send()
    wait_idle(qtbot, controller)
    sent = str(server.requests[-1]["messages"][-1]["content"])
    assert f"[The resource {uri} (MCP server ev) changed since it was attached" in sent
    notes = [n.text() for n in tab.transcript.findChildren(QLabel, "replyNote")]
    assert notes == [f"⚠ Read again for this turn, as they changed since they were "
                     f"attached: {uri} (ev)."]
