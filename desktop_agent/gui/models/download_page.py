"""The "Download" page: a short list of small tool-calling models, or any Hugging Face file.

Like Jan's hub, but short: the engine's catalogue with each model's size and note,
the best one for this computer preselected (the engine picks it). The selected one
is described on the right with whether it would fit now (the engine's judgement,
said before downloading), and one button downloads it (the size on the button is
the consent) and runs it; a model already downloaded just runs. A model too big
for this computer needs a second click. Below, any repository or file on the hub;
a gated one needs a token, which *Add token…* keeps in the keyring.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop_agent.gui.icons import current_palette, set_icon
from desktop_agent.gui.models.model_texts import (
    count_text,
    fit_colour,
    fit_label,
    parameter_count_text,
    size_text,
)

if TYPE_CHECKING:
    from desktop_agent.gui.models.local_models_bridge import LocalModelsBridge
    from desktop_agent.session import CatalogChoice

_ID_ROLE = Qt.ItemDataRole.UserRole
BEST_BADGE = "Best for this computer"


class DownloadPage(QWidget):
    """The catalogue, the selected model's card and the any-repository form.

    Signals:
        token_requested(): The person wants to add a Hugging Face access token.
    """

    token_requested = Signal()

    def __init__(self, bridge: LocalModelsBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self._choices = {choice.model.id: choice for choice in bridge.catalog()}
        self._confirming = False
        self._badges: list[QLabel] = []
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 8, 0, 0)
        layout.setSpacing(12)
        self.list = QListWidget()
        self.list.setObjectName("catalogList")
        self.list.setAlternatingRowColors(True)
        for choice in self._choices.values():
            self._add_row(choice)
        self.list.currentItemChanged.connect(lambda *_: self._show_selected())
        layout.addWidget(self.list, 5)

        side = QVBoxLayout()
        side.setSpacing(12)
        side.addWidget(self._card())
        side.addWidget(self._repository_form())
        side.addStretch(1)
        layout.addLayout(side, 4)
        bridge.download_refused.connect(self._say)
        # Bound methods, not lambdas: Qt forgets them with this page, a lambda it would keep.
        bridge.library_changed.connect(self.refresh)
        self.select_best()
        self.restyle()

    def select_best(self) -> None:
        """Highlight the best model for this computer (the first when none fits)."""
        rows = [row for row in range(self.list.count())
                if (choice := self._choice_at(row)) is not None and choice.best]
        self.list.setCurrentRow(rows[0] if rows else 0)

    def selected(self) -> CatalogChoice | None:
        """The highlighted catalogue model, as the engine judged it."""
        return self._choice_at(self.list.currentRow())

    def restyle(self) -> None:
        """Colour the badge and the fit sentence in the theme now in use."""
        colours = current_palette()
        for badge in self._badges:
            badge.setStyleSheet(f"color: {colours.accent}; background: {colours.accent_soft}; "
                                "border-radius: 8px; padding: 0 8px; font-weight: 600;")
        self._show_selected()

    def refresh(self, _entries: object = None) -> None:
        """Ask the engine again (after a scan: a model downloaded now just runs)."""
        self._choices = {choice.model.id: choice for choice in self._bridge.catalog()}
        self._show_selected()

    # -- the catalogue -----------------------------------------------------------------------

    def _choice_at(self, row: int) -> CatalogChoice | None:
        item = self.list.item(row)
        return self._choices.get(str(item.data(_ID_ROLE))) if item is not None else None

    def _add_row(self, choice: CatalogChoice) -> None:
        model = choice.model
        row = QWidget()
        row_layout = QVBoxLayout(row)
        row_layout.setContentsMargins(10, 7, 10, 7)
        row_layout.setSpacing(1)
        top = QHBoxLayout()
        top.setSpacing(8)
        title = QLabel(model.title)
        font = title.font()
        font.setBold(True)
        title.setFont(font)
        top.addWidget(title)
        if choice.best:
            badge = QLabel(BEST_BADGE)
            badge.setObjectName("bestBadge")
            self._badges.append(badge)
            top.addWidget(badge)
        top.addStretch(1)
        size = QLabel(size_text(model.size_bytes))
        size.setObjectName("catalogNote")
        top.addWidget(size)
        row_layout.addLayout(top)
        note = QLabel(model.note)
        note.setObjectName("catalogNote")
        row_layout.addWidget(note)
        item = QListWidgetItem()
        item.setData(_ID_ROLE, model.id)
        item.setSizeHint(row.sizeHint())
        self.list.addItem(item)
        self.list.setItemWidget(item, row)

    def _card(self) -> QFrame:
        card = QFrame()
        card.setObjectName("quickStart")
        layout = QVBoxLayout(card)
        layout.setContentsMargins(14, 12, 14, 12)
        self.card_title = QLabel()
        self.card_title.setObjectName("modelTitle")
        self.card_facts = QLabel()
        self.card_facts.setObjectName("modelPath")
        self.card_facts.setWordWrap(True)
        self.card_note = QLabel()
        self.card_note.setWordWrap(True)
        self.card_fit = QLabel()
        self.card_fit.setWordWrap(True)
        self.download_button = QPushButton()
        self.download_button.setProperty("role", "primary")
        set_icon(self.download_button, "download", "accent_text")
        self.download_button.clicked.connect(self._download_selected)
        for widget in (self.card_title, self.card_facts, self.card_note, self.card_fit):
            layout.addWidget(widget)
        layout.addWidget(self.download_button, 0, Qt.AlignmentFlag.AlignLeft)
        return card

    def _show_selected(self) -> None:
        choice = self.selected()
        self._confirming = False
        if choice is None:
            return
        model = choice.model
        tools = ("calls tools with its own template" if model.template_offers_tools else
                 "calls tools with the app's tool template")
        self.card_title.setText(model.title)
        self.card_facts.setText(
            f"{model.repo_id} · {model.filename}\n{size_text(model.size_bytes)} download · "
            f"{parameter_count_text(model.parameters)} parameters · trained for "
            f"{count_text(model.context_length)} tokens · {tools}")
        self.card_note.setText(model.note)
        self.card_fit.setText(choice.fit.sentence)
        self.card_fit.setStyleSheet(
            f"color: {fit_colour(fit_label(choice.fit), current_palette())};")
        self._label_button(choice)

    def _label_button(self, choice: CatalogChoice) -> None:
        size = size_text(choice.model.size_bytes)
        if self._confirming:
            text = f"Download {size} anyway"
        elif choice.downloaded is not None:
            text = "Run (already downloaded)"
        else:
            text = f"Download {size} and run"
        self.download_button.setText(text)
        self.download_button.setEnabled(self._bridge.downloading is None)

    def _download_selected(self) -> None:
        choice = self.selected()
        if choice is None:
            return
        if choice.downloaded is not None:
            self._bridge.run(choice.downloaded)
            return
        if fit_label(choice.fit) == "Too big" and not self._confirming:
            self._confirming = True  # said before download; downloading needs a second click
            self._label_button(choice)
            return
        self._confirming = False
        self._bridge.download(choice.model.id, run_after=True)

    # -- any repository -------------------------------------------------------------------

    def _repository_form(self) -> QGroupBox:
        box = QGroupBox("Any Hugging Face repository")
        form = QFormLayout(box)
        self.repo_edit = QLineEdit()
        self.repo_edit.setPlaceholderText("unsloth/Qwen3-1.7B-GGUF")
        self.file_edit = QLineEdit()
        self.file_edit.setPlaceholderText("its Q4_K_M file when left empty")
        self.repo_message = QLabel()
        self.repo_message.setWordWrap(True)
        self.repo_message.hide()
        self.repo_button = QPushButton("Download")
        set_icon(self.repo_button, "download")
        self.repo_button.clicked.connect(self._download_repository)
        self.repo_edit.returnPressed.connect(self._download_repository)
        self.file_edit.returnPressed.connect(self._download_repository)
        token = QPushButton("Add token…")
        token.setToolTip("Gated and private repositories need a Hugging Face access token "
                         "(huggingface.co → Settings → Access Tokens); it is kept in the "
                         "system keyring.")
        token.clicked.connect(self.token_requested)
        form.addRow("Repository", self.repo_edit)
        form.addRow("File", self.file_edit)
        row = QHBoxLayout()
        row.addWidget(token)
        row.addStretch(1)
        row.addWidget(self.repo_button)
        form.addRow(row)
        form.addRow(self.repo_message)
        return box

    def _download_repository(self) -> None:
        repo, filename = self.repo_edit.text().strip().rstrip("/"), self.file_edit.text().strip()
        if filename and not filename.lower().endswith(".gguf"):
            self._say(f"{filename} is not a model file: name a .gguf file of the repository "
                      "(its Files page lists them), or leave File empty for its Q4_K_M file.")
            return
        self.repo_message.hide()
        # The repository alone when it is not owner/name: the engine says what it expects.
        self._bridge.download(f"{repo}/{filename}" if filename and "/" in repo else repo)

    def _say(self, text: str) -> None:
        """The engine refused what the form asked for: its sentence under the form."""
        self.repo_message.setText(text)
        self.repo_message.setStyleSheet(f"color: {current_palette().danger};")
        self.repo_message.show()
