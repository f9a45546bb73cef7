"""Request and response bodies of command previews (``/commands`` with ``preview``, apply, discard).

Kept apart from :mod:`.api_models` because they describe one feature: a
command run on an overlay of the working folder, and what it would change.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from desktop_agent.session import PreviewCard

#: Changes a ``command_preview`` event lists at most (``GET .../previews`` lists all).
EVENT_CHANGES = 1_000


class PreviewChangeOut(BaseModel):
    path: str
    change: str = Field(description="'created', 'modified', 'deleted', 'mode' or 'renamed'.")
    kind: str = Field(description="What is there after ('file', 'dir', 'link', 'fifo'); for "
                                  "a deletion, what was there.")
    mode: int | None = None
    old_kind: str | None = None
    old_mode: int | None = None
    size: int = 0
    old_size: int | None = None
    target: str | None = Field(default=None, description="A link's text (never followed).")
    old_target: str | None = None
    hard_link_of: str | None = Field(default=None,
                                     description="Another name of the same file (applied as "
                                                 "a hard link).")
    renamed_from: str | None = Field(default=None,
                                     description="For 'renamed': where the file was; for a "
                                                 "created folder: the deleted folder it holds "
                                                 "the same files as (a move).")
    files: int = Field(default=0, description="For a deleted folder: the files it held.")


class PreviewOut(BaseModel):
    """A command that ran on an overlay: its output and what it would change."""

    id: str = Field(description="Pass it to POST .../previews/{id}/apply or /discard.")
    tool_use_id: str | None = Field(description="The model's bash call it belongs to; None for "
                                                "a /commands preview.")
    command: str
    output: str = Field(description="The command's result as the model reads it.")
    exit_code: int | None
    summary: str = Field(description="In words, e.g. 'changes 3 files, deletes 1'.")
    changes: list[PreviewChangeOut]
    changes_total: int = Field(description="Changes in all (an event lists the first 1,000).")
    diffs: dict[str, str] = Field(description="Unified diffs of the first changed text files, "
                                              "by path (about 500 KB of them at most).")
    tree: dict[str, Any] = Field(description="The changes as folders with totals (three "
                                             "levels; deeper folders keep their totals).")
    notes: list[str]
    incomplete: str | None = Field(description="Why it cannot be applied (the data folder's "
                                               "disk filled up); it was discarded.")

    @classmethod
    def of(cls, card: PreviewCard) -> PreviewOut:
        """The body for a session's preview card."""
        return cls.model_validate(card.to_dict())


class PreviewList(BaseModel):
    previews: list[PreviewOut]


class PreviewApplyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    force: bool = Field(default=False, description="Overwrite files changed since the command "
                                                   "ran (a 409 names them).")


class PreviewDiscardRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(default="", max_length=10_000,
                        description="Told to the model: 'discarded: <reason>'.")


class PreviewApplied(BaseModel):
    id: str
    applied: list[str] = Field(description="Paths written, made, removed or changed.")
    overwritten: list[str] = Field(description="Files changed meanwhile that were overwritten "
                                               "(force).")


class PreviewDiscarded(BaseModel):
    id: str
    discarded: bool = True
