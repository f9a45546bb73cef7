"""README's two commands are the ones CI runs, and every script they name exists.

A newcomer types these first; if they drift from what CI proves, the first thing a new
user meets is a broken command.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    first_block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert first_block and text.index(first_block.group(0)) < text.index("\n## "), (
        "README.md must start with its commands, before any section")
    return [line for line in first_block.group(1).splitlines()
            if line.strip() and not line.startswith("#")]


def test_the_readme_starts_with_an_install_and_a_test_command() -> None:
    install, tests = readme_commands()
    assert "scripts/install.sh" in install and install.endswith("desktop-agent")
    assert "scripts/install-test-tools.sh" in tests and "pytest" in tests


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    _install, tests = readme_commands()
    ci_lines = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert tests in ci_lines


def test_the_user_install_is_the_whole_app_without_the_test_tools() -> None:
    """`pip install .` alone is the SDK; the README's install command brings the app extra."""
    script = (REPO / "scripts" / "install.sh").read_text(encoding="utf-8")
    installs = [line for line in script.splitlines() if "pip install" in line]
    assert installs and all("[test]" not in line and "build" not in line for line in installs)
    assert any('".[app]"' in line for line in installs)


def test_every_script_the_commands_name_exists() -> None:
    for command in readme_commands():
        for word in shlex.split(command.replace("&&", " ")):
            if word.endswith(".sh"):
                assert (REPO / word).is_file(), f"README names {word}, which is missing"
