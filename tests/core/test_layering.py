"""The core is a Qt-free SDK: importing it must not load Qt or the GUI."""

import subprocess
import sys

CHECK = """
import sys
import desktop_agent, desktop_agent.core
import desktop_agent.core.client, desktop_agent.core.providers, desktop_agent.core.stream
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
            "import desktop_agent.core.client, desktop_agent.core.sessions\n"
            "import desktop_agent.core.query_run, desktop_agent.core.deferred_approvals\n"
            "import desktop_agent.config, desktop_agent.context, desktop_agent.utils\n"
            "import desktop_agent.hooks, desktop_agent.tools, desktop_agent.types\n"
            "print(','.join(sorted(m for m in sys.modules if m.startswith(("
            "'desktop_agent.store', 'desktop_agent.server', 'desktop_agent.gui', 'fastapi')))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "", f"the core pulled in: {out.stdout.strip()}"
