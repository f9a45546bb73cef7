"""The core is a Qt-free SDK: importing it must not load Qt or the GUI."""

import os
import subprocess
import sys
from pathlib import Path

CHECK = """
import sys
import desktop_agent, desktop_agent.core
import desktop_agent.core.client, desktop_agent.core.servers.discovery
import desktop_agent.core.wire.stream
import desktop_agent.testing
bad = sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6', 'qasync')
             or m.startswith('desktop_agent.gui'))
print(','.join(bad))
"""


def test_core_imports_no_qt():
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "", f"the core pulled in: {out.stdout.strip()}"


def test_top_level_import_is_light():
    """`import desktop_agent` must not import the openai SDK (start-up time)."""
    code = ("import sys, desktop_agent; "
            "print(','.join(m for m in ('openai', 'aiohttp', 'httpx', 'httpx2', 'tiktoken') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == ""


def test_the_core_and_the_seed_modules_never_load_the_store():
    """Sessions are a core protocol; only desktop_agent.store implements it over SQLite."""
    code = ("import sys\n"
            "import desktop_agent.core.client, desktop_agent.core.context.history_stores\n"
            "import desktop_agent.core.query_run, desktop_agent.core.tooling.deferred_approvals\n"
            "import desktop_agent.config, desktop_agent.context, desktop_agent.utils\n"
            "import desktop_agent.hooks, desktop_agent.tools, desktop_agent.types\n"
            "print(','.join(sorted(m for m in sys.modules if m.startswith(("
            "'desktop_agent.store', 'desktop_agent.server', 'desktop_agent.gui', 'fastapi')))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "", f"the core pulled in: {out.stdout.strip()}"


def test_no_class_is_assembled_from_mixins():
    """Composition over mixins: a window owns its parts instead of inheriting them.

    Fails on a class named ``...Mixin`` anywhere in the package, and on a class
    that derives from a Qt class and from one of the package's own classes.
    """
    import ast
    from pathlib import Path

    import desktop_agent

    package = Path(desktop_agent.__file__).parent
    classes = [(path, node) for path in package.rglob("*.py")
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
               if isinstance(node, ast.ClassDef)]
    own = {node.name for _path, node in classes}
    offenders = []
    for path, node in classes:
        bases = [ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases]
        qt = [b for b in bases if b.startswith("Q")]
        mixed = [b for b in bases if b in own]
        if node.name.endswith("Mixin") or (qt and mixed):
            offenders.append(f"{path.relative_to(package)}: {node.name}({', '.join(bases)})")
    assert offenders == []


def test_the_core_names_no_app_secret_or_folder():
    """Keyring names (``conv:ID:NAME``), the data folder and config.json belong to the app.

    The core takes a secret lookup and a config path from its caller (import-linter
    also forbids it the appdata modules for paths and secrets, keyring and platformdirs).
    """
    from pathlib import Path

    import desktop_agent.core

    core = Path(desktop_agent.core.__file__).parent
    offenders = [f"{path.relative_to(core)}: {needle}" for path in core.rglob("*.py")
                 for needle in ('"conv:', "f\"conv:", "config_path(", "data_dir(", "config.json")
                 if needle in path.read_text(encoding="utf-8")]
    assert offenders == []


CYCLE_CHECK = Path(__file__).resolve().parents[2] / ".ci" / "import_cycles.py"


def _check_cycles(package: str, path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(path)}
    return subprocess.run([sys.executable, str(CYCLE_CHECK), package], capture_output=True,
                          text=True, env=env, timeout=120)


def test_no_two_modules_import_each_other():
    """CI's cycle check (run by .ci/lint.sh) passes on this checkout."""
    out = _check_cycles("desktop_agent", CYCLE_CHECK.parents[1])
    assert out.returncode == 0, out.stdout + out.stderr
    assert "none in desktop_agent" in out.stdout


def test_the_cycle_check_names_a_cycle_hidden_in_type_checking_and_functions(tmp_path: Path):
    """A loop through a TYPE_CHECKING import and an import in a function still fails."""
    package = tmp_path / "looped"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "window.py").write_text("from looped import part\n")
    (package / "part.py").write_text("from typing import TYPE_CHECKING\n"
                                     "if TYPE_CHECKING:\n    from looped import helper\n")
    (package / "helper.py").write_text("def late():\n    from looped.window import x\n")
    (package / "outside.py").write_text("import looped.window\n")
    out = _check_cycles("looped", tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "3 modules: looped.helper, looped.part, looped.window" in out.stdout
    assert "looped.helper -> looped.window  (line 2: from looped.window import x)" in out.stdout
    assert "outside" not in out.stdout
