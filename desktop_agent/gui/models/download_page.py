"""The "Download" page: a short list of small tool-calling models, or any Hugging Face file.

Like Jan's hub, but short: the catalogue's models with their size, parameters,
trained context and whether they call tools, the best one for this computer
preselected. The selected one is described on the right with whether it would fit
now (said before downloading), and one button downloads it (the size on the
button is the consent) and runs it. A model too big for this computer needs a
second click. Below, any repository and file on the hub; a gated one needs a
token, which *Add token…* keeps in the keyring.
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
from desktop_agent.gui.models.model_downloads import DownloadTarget
from desktop_agent.gui.models.model_texts import (
    count_text,
    fit_colour,
    parameter_count_text,
    size_text,
)

if TYPE_CHECKING:
    from desktop_agent.engine import CatalogModel
    from desktop_agent.gui.models.model_downloads import ModelDownloads

_MODEL_ROLE = Qt.ItemDataRole.UserRole
BEST_BADGE = "Best for this computer"


class DownloadPage(QWidget):
    """The catalogue, the selected model's card and the any-repository form.

    Signals:
        token_requested(): The person wants to add a Hugging Face access token.
    """

    token_requested = Signal()

    def __init__(self, downloads: ModelDownloads, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._downloads = downloads
        self._best = downloads.best_pick()
        self._confirming = False
        self._badges: list[QLabel] = []
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 8, 0, 0)
        layout.setSpacing(12)
        self.list = QListWidget()
        self.list.setObjectName("catalogList")
        self.list.setAlternatingRowColors(True)
        self.list.setSpacing(0)
        for model in downloads.catalog():
            self._add_row(model)
        self.list.currentItemChanged.connect(lambda *_: self._show_selected())
        layout.addWidget(self.list, 5)

        side = QVBoxLayout()
        side.setSpacing(12)
        self.card = QFrame()
        self.card.setObjectName("quickStart")
        card = QVBoxLayout(self.card)
        card.setContentsMargins(14, 12, 14, 12)
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
            card.addWidget(widget)
        card.addWidget(self.download_button, 0, Qt.AlignmentFlag.AlignLeft)
        side.addWidget(self.card)
        side.addWidget(self._repository_form())
        side.addStretch(1)
        layout.addLayout(side, 4)
        self.select_best()
        self.restyle()

    def select_best(self) -> None:
        """Highlight the best model for this computer (the first when none fits)."""
        for row in range(self.list.count()):
            item = self.list.item(row)
            if item is not None and item.data(_MODEL_ROLE) == self._best:
                self.list.setCurrentRow(row)
                return
        self.list.setCurrentRow(0)

    def selected(self) -> CatalogModel | None:
        """The highlighted catalogue model."""
        item = self.list.currentItem()
        model: CatalogModel | None = item.data(_MODEL_ROLE) if item is not None else None
        return model

    def restyle(self) -> None:
        """Colour the badge and the fit sentence in the theme now in use."""
        colours = current_palette()
        for badge in self._badges:
            badge.setStyleSheet(f"color: {colours.accent}; background: {colours.accent_soft}; "
                                "border-radius: 8px; padding: 0 8px; font-weight: 600;")
        self._show_selected()

    def refresh(self) -> None:
        """Say again what the card says (after a download ended: "Run" replaces "Download")."""
        self._show_selected()

    # -- the catalogue -----------------------------------------------------------------------

    def _add_row(self, model: CatalogModel) -> None:
        row = QWidget()
        row_layout = QVBoxLayout(row)
        row_layout.setContentsMargins(10, 7, 10, 7)
        row_layout.setSpacing(1)
        top = QHBoxLayout()
        top.setSpacing(8)
        title = QLabel(model.title)
        title.setObjectName("catalogTitle")
        font = title.font()
        font.setBold(True)
        title.setFont(font)
        top.addWidget(title)
        if model == self._best:
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
        item.setData(_MODEL_ROLE, model)
        item.setSizeHint(row.sizeHint())
        self.list.addItem(item)
        self.list.setItemWidget(item, row)

    def _show_selected(self) -> None:
        model = self.selected()
        self._confirming = False
        if model is None:
            return
        fit = self._downloads.catalog_fit(model)
        tools = ("calls tools with its own template" if model.template_offers_tools else
                 "calls tools with the app's tool template")
        self.card_title.setText(model.title)
        self.card_facts.setText(
            f"{model.repo_id} · {model.filename}\n{size_text(model.size_bytes)} download · "
            f"{parameter_count_text(model.parameters)} parameters · trained for "
            f"{count_text(model.context_length)} tokens · {tools}")
        self.card_note.setText(model.note)
        self.card_fit.setText(fit.sentence)
        self.card_fit.setStyleSheet(f"color: {fit_colour(fit.label, current_palette())};")
        self._label_button(model)

    def _label_button(self, model: CatalogModel) -> None:
        downloading = self._downloads.downloading is not None
        if self._confirming:
            text = f"Download {size_text(model.size_bytes)} anyway"
        elif self._downloads.is_downloaded(model):
            text = "Run (already downloaded)"
        else:
            text = f"Download {size_text(model.size_bytes)} and run"
        self.download_button.setText(text)
        self.download_button.setEnabled(not downloading)

    def _download_selected(self) -> None:
        model = self.selected()
        if model is None:
            return
        if self._downloads.catalog_fit(model).label == "Too big" and not self._confirming:
            self._confirming = True  # said before download; downloading needs a second click
            self._label_button(model)
            return
        self._confirming = False
        self._downloads.download(DownloadTarget(model.repo_id, model.filename, model.size_bytes,
                                             run_after=True))

    # -- any repository -------------------------------------------------------------------

    def _repository_form(self) -> QGroupBox:
        box = QGroupBox("Any Hugging Face repository")
        form = QFormLayout(box)
        self.repo_edit = QLineEdit()
        self.repo_edit.setPlaceholderText("Qwen/Qwen3-4B-GGUF")
        self.file_edit = QLineEdit()
        self.file_edit.setPlaceholderText("Qwen3-4B-Q4_K_M.gguf")
        self.repo_message = QLabel()
        self.repo_message.setWordWrap(True)
        self.repo_message.hide()
        self.repo_button = QPushButton("Download")
        set_icon(self.repo_button, "download")
        self.repo_button.clicked.connect(self._download_repository)
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
        repo, filename = self.repo_edit.text().strip().strip("/"), self.file_edit.text().strip()
        if not filename and repo.lower().endswith(".gguf") and repo.count("/") >= 2:
            owner, name, filename = repo.split("/", 2)  # owner/repo/file.gguf in one field
            repo = f"{owner}/{name}"
        if repo.count("/") != 1 or not all(repo.split("/")):
            self._say("Write the repository as owner/name, for example Qwen/Qwen3-4B-GGUF.")
            return
        if not filename.lower().endswith(".gguf"):
            self._say("Name a .gguf file in the repository, for example Qwen3-4B-Q4_K_M.gguf "
                      "(the repository's Files page lists them).")
            return
        self.repo_message.hide()
        self._downloads.download(DownloadTarget(repo, filename))

    def _say(self, text: str) -> None:
        self.repo_message.setText(text)
        self.repo_message.setStyleSheet(f"color: {current_palette().danger};")
        self.repo_message.show()

