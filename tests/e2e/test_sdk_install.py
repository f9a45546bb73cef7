"""The SDK installed alone, in a fresh virtual environment, as a script author installs it.

``pip install desktop-agent`` (this repository's wheel) must give a working
``from desktop_agent import query, Client`` without the window's, the server's or
MCP's packages, and the ``desktop-agent`` command must then say in a sentence how
to get the whole app instead of failing with a traceback. The packages come from
PyPI (pip's cache makes later runs quick); without the network the test skips
locally and fails in CI.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tier_policy import part_missing

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[2]

# Runs inside the fresh environment: a real query against the scripted server.
SCRIPT = textwrap.dedent("""
    import asyncio, importlib.util, json, sys
    from desktop_agent import AgentOptions, Client, TextBlock, query
    from desktop_agent.testing import ScriptedServer, script

    async def main():
        with ScriptedServer() as server:
            server.enqueue(script.text("hello from the SDK alone"), script.text("and again"))
            options = AgentOptions(model="m", base_url=server.base_url)
            result = await query("hi", options)
            async with Client(options) as client:
                await client.query("again")
                second = "".join([b.text async for b in client.receive_messages()
                                  if isinstance(b, TextBlock)])
        absent = [m for m in ("PySide6", "fastapi", "uvicorn", "mcp", "keyring")
                  if importlib.util.find_spec(m) is None]
        print(json.dumps({"first": str(getattr(result, "text", result)), "second": second,
                          "absent": absent,
                          "loaded": [m for m in ("PySide6", "fastapi") if m in sys.modules]}))

    asyncio.run(main())
""")


def _run(command: list[str], what: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, capture_output=True, text=True, timeout=600,
                            **kwargs)  # type: ignore[call-overload]
    if result.returncode != 0:
        text = result.stderr + result.stdout
        if "Could not find a version" in text or "NewConnectionError" in text \
                or "Temporary failure in name resolution" in text:
            part_missing(f"{what}: PyPI cannot be reached ({text.strip()[-300:]})")
        pytest.fail(f"{what} failed:\n{text[-3000:]}", pytrace=False)
    return result


@pytest.fixture(scope="module")
def sdk_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sdk-alone")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(root / "wheel"),
          str(REPO)], "building the wheel")
    [wheel] = (root / "wheel").glob("desktop_agent-*.whl")
    _run([sys.executable, "-m", "venv", str(root / "env")], "making a virtual environment")
    python = root / "env" / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
          str(wheel)], "pip install desktop-agent (the SDK alone)")
    return python


def test_query_and_client_work_with_the_sdk_alone(sdk_python: Path) -> None:
    out = _run([str(sdk_python), "-c", SCRIPT], "a script using the SDK alone")
    answer = json.loads(out.stdout.strip().splitlines()[-1])
    assert "hello from the SDK alone" in answer["first"]
    assert answer["second"] == "and again"
    assert answer["absent"] == ["PySide6", "fastapi", "uvicorn", "mcp", "keyring"]
    assert answer["loaded"] == []


@pytest.mark.parametrize(("args", "needs"), [
    (["serve"], ("fastapi", "uvicorn", "keyring", "platformdirs", "starlette")),
    ([], ("PySide6",)),
])
def test_the_app_commands_say_how_to_install_the_app(
        sdk_python: Path, args: list[str], needs: tuple[str, ...], tmp_path: Path) -> None:
    command = sdk_python.parent / "desktop-agent"
    # offscreen: past the display check, to the window's own imports
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "QT_QPA_PLATFORM": "offscreen"}
    result = subprocess.run([str(command), *args], capture_output=True, text=True,
                            timeout=120, env=env)
    assert result.returncode == 2, result.stderr
    assert "pip install 'desktop-agent[app]'" in result.stderr
    assert any(f"needs {name}," in result.stderr for name in needs), result.stderr
    assert "Traceback" not in result.stderr
