"""The SDK's LocalModel as a script uses it: the guide's block and examples/local_model.py,
on the real engine with the SmolLM2 GGUF from PyPI (the scripted server cannot stand in)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from runner_fixtures import smollm2

from desktop_agent.engine.machine import load_factor

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_the_sdk_guide_s_local_model_block_answers(capsys: pytest.CaptureFixture[str]) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "core"))
    try:
        from test_sdk_guide import run_block, sdk_blocks
    finally:
        sys.path.remove(str(ROOT / "tests" / "core"))
    blocks = sdk_blocks(local_models=True)
    assert len(blocks) == 1
    model = smollm2()
    for block in blocks:
        run_block(block.replace('"qwen3-1.7b-q4_k_m.gguf"', repr(str(model))),
                  {"__name__": "guide"})
    assert capsys.readouterr().out.strip()


def test_the_example_runs_a_model_by_its_file_name_and_gets_a_reply(tmp_path: Path) -> None:
    model = smollm2()
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "SmolLM2-135M.gguf").symlink_to(model)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(ROOT),
           "LLAMA_CACHE": str(folder)}  # a folder the library searches: llama.cpp's cache
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "local_model.py"),
                           "smollm2-135m.gguf"], capture_output=True, text=True, env=env,
                          timeout=300 * load_factor(), check=False)

    assert done.returncode == 0, done.stderr
    first, *answer = done.stdout.splitlines()
    assert first.startswith("SmolLM2-135M runs at http://127.0.0.1:")
    assert first.endswith("with 2048 tokens of context")
    assert "".join(answer).strip()
