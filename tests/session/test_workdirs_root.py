"""The working-folder rule with a configured root (``serve --workdirs``).

Conversations' folders may live under a folder the operator names, such as a
volume every replica mounts; the rule accepts that folder's children and still
refuses the folder itself, the data folder and anything inside it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop_agent.session import WorkdirError, workdir_path


def test_a_configured_root_s_folders_are_accepted_and_the_data_folder_still_refused(
        data_dir: Path, tmp_path: Path) -> None:
    root = tmp_path / "shared"
    root.mkdir()
    assert workdir_path("c1", {}, root) == root.resolve() / "c1"
    chosen = root / "Chat 2026-11-26 02.00"
    assert workdir_path("c1", {"workdir": str(chosen)}, root) == chosen.resolve()
    for bad in (root, data_dir, data_dir / "logs", data_dir / "workdirs"):
        with pytest.raises(WorkdirError):
            workdir_path("c1", {"workdir": str(bad)}, root)


@pytest.mark.parametrize("holder", ["data", "parent"])
def test_a_root_that_is_or_holds_the_data_folder_opens_nothing_inside_it(
        data_dir: Path, holder: str) -> None:
    root = data_dir if holder == "data" else data_dir.parent
    for inside in (data_dir / "checkpoints", data_dir / "logs" / "x"):
        with pytest.raises(WorkdirError, match="inside the app's data folder"):
            workdir_path("c1", {"workdir": str(inside)}, root)
