"""The engine's public names, what importing it costs, and that it stays Qt-free."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import desktop_agent.engine as engine

ROOT = Path(__file__).resolve().parents[2]


def imported_after(code: str) -> dict[str, bool]:
    probe = (f"import sys\n{code}\nimport json\nprint(json.dumps({{name: name in sys.modules "
             "for name in ('gguf', 'numpy', 'huggingface_hub', 'PySide6', 'fastapi')}))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            cwd=ROOT, check=True, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_every_public_name_resolves() -> None:
    for name in engine.__all__:
        assert getattr(engine, name) is not None, name


def test_importing_the_package_loads_no_model_library_yet() -> None:
    assert imported_after("import desktop_agent.engine") == {
        "gguf": False, "numpy": False, "huggingface_hub": False, "PySide6": False,
        "fastapi": False}


def test_every_engine_module_is_qt_and_web_framework_free() -> None:
    modules = sorted(p.stem for p in (ROOT / "desktop_agent" / "engine").glob("*.py"))
    loaded = imported_after("\n".join(f"import desktop_agent.engine.{m}" for m in modules))

    assert not loaded["PySide6"] and not loaded["fastapi"]


def test_reading_a_model_and_resolving_a_name_load_neither_gguf_nor_numpy() -> None:
    """The one binary leaves them out: headers are read with the engine's own tables."""
    loaded = imported_after(
        "from pathlib import Path\n"
        "from desktop_agent.engine.gguf_precheck import check_model_file\n"
        "from desktop_agent.engine.model_names import resolve_model\n"
        "import desktop_agent.engine.runner, desktop_agent.engine.library\n"
        "try:\n    check_model_file(Path('no-such.gguf'))\nexcept Exception:\n    pass")

    assert not loaded["gguf"] and not loaded["numpy"]
