"""``/help``: the conversation's commands, the servers' prompts and the skills, to read.

A small dialog beside the conversation (not in the transcript: it is about the
app, not part of the conversation, and must not be sent to the model). The text
is the session's (:meth:`ConversationSession.slash_help`), the same Markdown for
every front end.
"""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget


class SlashHelpDialog(QDialog):
    """Shows ``/help``'s Markdown.

    Attributes:
        text: The browser holding it (tests read it).
    """

    def __init__(self, markdown: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("slashHelp")
        self.setWindowTitle("Commands and skills")
        layout = QVBoxLayout(self)
        self.text = QTextBrowser()
        self.text.setObjectName("slashHelpText")
        self.text.setOpenLinks(False)
        self.text.setMarkdown(markdown)
        layout.addWidget(self.text)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(560, 480)
