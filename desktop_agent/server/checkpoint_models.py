"""Request and response bodies of the checkpoint routes (undo, restore, files changed).

Kept apart from :mod:`.api_models` because they describe one feature's
records (the session's checkpoints and per-turn changes), read only by
:mod:`.routes.checkpoints`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class CheckpointOut(BaseModel):
    id: str
    at: float = Field(description="When it was taken (seconds since the epoch).")
    kind: str = Field(description="'tool_round', 'command', 'turn_end' or 'restore'.")
    turn: str = Field(description="The turn (or command, or restore) it belongs to.")
    message_id: str | None = Field(description="The message that turn answered, if any.")
    notes: list[str] = Field(description="What it left out (files over a cap), in words.")


class CheckpointList(BaseModel):
    checkpoints: list[CheckpointOut]
    size_bytes: int = Field(description="What the checkpoints take in the data folder.")


class FileChangeOut(BaseModel):
    path: str
    change: str = Field(description="'added', 'modified' or 'deleted'.")
    kind: str = Field(description="'file', 'link', 'dir' or 'skipped' (over a cap).")
    summary: str = Field(description="One line in words, e.g. 'Changes a.py (+3 −1).'")
    added: int | None = Field(default=None, description="Lines added (text files).")
    removed: int | None = Field(default=None, description="Lines removed (text files).")
    diff: str | None = Field(default=None, description="Unified diff (text files).")


class TurnFiles(BaseModel):
    turn: str = Field(description="Pass it to POST .../undo to undo this turn.")
    kind: str = Field(description="'turn', 'command' or 'restore'.")
    message_id: str | None
    files: list[FileChangeOut]


class FilesChangedList(BaseModel):
    turns: list[TurnFiles] = Field(description="Oldest first; turns that changed no file "
                                               "are left out.")


class UndoRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    turn: str | None = Field(default=None, max_length=100,
                             description="The turn to undo; left out: the latest that changed "
                                         "files.")
    force: bool = Field(default=False, description="Overwrite files changed after the agent "
                                                   "(otherwise 409 names them).")


class RestoreRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message_id: str | None = Field(default=None, max_length=100,
                                   description="Restore files to before this message.")
    checkpoint_id: str | None = Field(default=None, max_length=100,
                                      description="Or: restore files to this checkpoint.")
    force: bool = Field(default=False, description="Overwrite files changed after the agent.")
    branch: bool = Field(default=False,
                         description="With message_id: also move the conversation back to "
                                     "before that message (the next message starts a new "
                                     "branch; the old one is kept).")

    @model_validator(mode="after")
    def _one_target(self) -> RestoreRequest:
        if (self.message_id is None) == (self.checkpoint_id is None):
            raise ValueError("give exactly one of message_id and checkpoint_id")
        if self.branch and self.message_id is None:
            raise ValueError("branch needs message_id")
        return self


class RestoreResult(BaseModel):
    turn: str | None = Field(description="The restore's own turn: undo it to go back "
                                         "(None: nothing needed restoring).")
    restored: list[str]
    removed: list[str]
    kept: list[str] = Field(description="Left as they are (over a cap, or a folder that "
                                        "still holds files nobody recorded).")
    overwritten: list[str] = Field(description="Files changed after the agent that 'force' "
                                               "overwrote.")
