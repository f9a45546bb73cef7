"""``desktop-agent models`` over real folder layouts, and ``models pull`` against the hub double.

The command runs as a person runs it: the installed entry point in a process of its
own, its home holding LM Studio's and Ollama's folders, the hub double as
``HF_ENDPOINT``. Ctrl+C is a real SIGINT.
"""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import time
from pathlib import Path

import huggingface_hub.constants
from gguf_samples import SampleModel, write_gguf
from hub_double import HubDouble
from library_layouts import ollama_pull

from desktop_agent.cli.models_command import describe_progress
from desktop_agent.engine.download_progress import DownloadProgress
from desktop_agent.engine.machine import load_factor

ROOT = Path(__file__).resolve().parents[2]
REPO = "unsloth/Qwen3-0.6B-GGUF"
FILE = "Qwen3-0.6B-Q4_K_M.gguf"


def command_env(home: Path, tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "HOME": str(home), "PYTHONPATH": str(ROOT),
            "DESKTOP_AGENT_DATA_DIR": str(tmp_path / "data"),
            "HF_HUB_DISABLE_TELEMETRY": "1", **extra}


def models(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "desktop_agent", "models", *args],
                          capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120 * load_factor(), check=False)


def test_models_json_lists_lm_studio_and_ollama_models_with_their_facts(
        home: Path, tmp_path: Path) -> None:
    write_gguf(home / ".lmstudio/models/Qwen/Qwen3-1.7B-GGUF/Qwen3-1.7B-Q4_K_M.gguf",
               SampleModel(name="Qwen3 1.7B"))
    ollama_pull(home / ".ollama" / "models", "qwen3", "4b",
                write_gguf(tmp_path / "o.gguf", SampleModel(name="Qwen3 4B")).read_bytes())
    (home / ".lmstudio/models/Qwen/Qwen3-1.7B-GGUF/broken.gguf").write_text("<html>")

    listed = models("--json", env=command_env(home, tmp_path))

    assert listed.returncode == 0, listed.stderr
    records = {r["name"]: r for r in json.loads(listed.stdout)}
    assert set(records) == {"qwen3:4b", "Qwen/Qwen3-1.7B-Q4_K_M", "Qwen/broken"}
    qwen = records["Qwen/Qwen3-1.7B-Q4_K_M"]
    assert (qwen["source"], qwen["quantization"], qwen["context_length"], qwen["size_label"]) \
        == ("LM Studio", "Q4_K_M", 32768, "1.5B")
    assert qwen["parameters"] > 0 and qwen["supports_tools"] is True
    assert qwen["fit"]["verdict"] == "fits" and qwen["fit"]["fits"] is True
    assert records["qwen3:4b"]["source"] == "Ollama"
    assert records["Qwen/broken"]["fit"] is None
    assert records["Qwen/broken"]["problem"] == "broken.gguf is not a GGUF model file."


def test_models_prints_a_table_and_says_why_a_file_cannot_be_used(
        home: Path, tmp_path: Path) -> None:
    write_gguf(home / ".lmstudio/models/Qwen/Qwen3-1.7B-GGUF/Qwen3-1.7B-Q4_K_M.gguf")
    extra = tmp_path / "mine"
    extra.mkdir()
    (extra / "half.gguf").write_bytes(b"GGUF\x03\x00\x00\x00")

    listed = models("--folder", str(extra), env=command_env(home, tmp_path))

    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["NAME", "PARAMS", "QUANT", "CONTEXT", "SIZE", "FITS", "FILE"]
    qwen = next(line.split() for line in lines if line.startswith("Qwen/"))
    assert qwen[:4] == ["Qwen/Qwen3-1.7B-Q4_K_M", "1.5B", "Q4_K_M", "32,768"]
    assert qwen[6:] == ["yes", str(home / ".lmstudio/models/Qwen/Qwen3-1.7B-GGUF/"
                                   "Qwen3-1.7B-Q4_K_M.gguf")]
    assert any(line.startswith("half") and "no: see below" in line for line in lines)
    assert "half: half.gguf is incomplete" in listed.stdout


def test_an_empty_computer_says_how_to_get_a_first_model(home: Path, tmp_path: Path) -> None:
    listed = models(env=command_env(home, tmp_path))
    assert listed.returncode == 0
    assert "desktop-agent models pull qwen3-1.7b" in listed.stdout


def test_pull_by_catalog_id_downloads_into_the_hub_cache_and_the_library_lists_it(
        home: Path, tmp_path: Path, hub: HubDouble) -> None:
    content = write_gguf(tmp_path / "q.gguf", SampleModel(name="Qwen3 0.6B")).read_bytes()
    hub.add_file(REPO, FILE, content)
    env = command_env(home, tmp_path, HF_ENDPOINT=hub.endpoint)

    pulled = models("pull", "qwen3-0.6b", env=env)

    assert pulled.returncode == 0, pulled.stderr
    assert pulled.stdout.startswith(f"Downloading {FILE} from {REPO}…")
    assert f"Run it: desktop-agent serve --model {FILE}" in pulled.stdout
    listed = json.loads(models("--json", env=env).stdout)
    assert [(r["name"], r["source"]) for r in listed] == [("unsloth/Qwen3-0.6B-Q4_K_M",
                                                           "Hugging Face")]
    assert Path(listed[0]["path"]).read_bytes() == content


def test_pull_refuses_what_is_not_a_repository_and_names_a_missing_one(
        home: Path, tmp_path: Path, hub: HubDouble) -> None:
    env = command_env(home, tmp_path, HF_ENDPOINT=hub.endpoint)
    assert "is not a Hugging Face model" in models("pull", "justaword", env=env).stderr
    missing = models("pull", "nobody/nothing/x.gguf", env=env)
    assert missing.returncode == 1 and "There is no model nobody/nothing" in missing.stderr


def test_ctrl_c_keeps_the_partial_file_says_how_to_resume_and_the_same_command_does(
        home: Path, tmp_path: Path, hub: HubDouble) -> None:
    # The hub client writes its .incomplete file a block (DOWNLOAD_CHUNK_SIZE, 10 MB) at a
    # time and this command looks for Ctrl+C as each block arrives: a file of four blocks,
    # paced so that it cannot arrive whole in under ~13 s on any machine, is caught mid-way.
    block = huggingface_hub.constants.DOWNLOAD_CHUNK_SIZE
    model = write_gguf(tmp_path / "q.gguf", SampleModel(vocabulary=200_000)).read_bytes()
    content = model + bytes(max(0, 4 * block - len(model)))  # padding after the tensors
    hub.add_file(REPO, FILE, content)
    hub.faults.pace = 0.02  # per 64 kB chunk
    env = command_env(home, tmp_path, HF_ENDPOINT=hub.endpoint)
    blobs = home / ".cache/huggingface/hub/models--unsloth--Qwen3-0.6B-GGUF/blobs"
    # Ctrl+C as a terminal sends it: a runner that started the tests in the background
    # (nohup, `&`) leaves SIGINT ignored, and an ignored SIGINT is inherited.
    process = subprocess.Popen([sys.executable, "-m", "desktop_agent", "models", "pull",
                                f"{REPO}/{FILE}"], env=env, cwd=ROOT, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60 * load_factor()
    while not any(p.stat().st_size for p in blobs.glob("*.incomplete")) if blobs.is_dir() \
            else True:
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)

    process.send_signal(signal.SIGINT)
    _out, err = process.communicate(timeout=60 * load_factor())

    assert process.returncode == 130, err
    assert "is kept for next time" in err and "Run the same command again to resume" in err
    kept = next(blobs.glob("*.incomplete")).stat().st_size
    assert 0 < kept < len(content)
    hub.faults.pace = 0.0
    resumed = models("pull", f"{REPO}/{FILE}", env=env)
    assert resumed.returncode == 0, resumed.stderr
    ranges = [r.headers.get("range") for r in hub.requests if r.server == "cdn"]
    assert ranges[-1] == f"bytes={kept}-"


def test_on_a_terminal_the_progress_line_shows_bytes_speed_and_time_left(
        home: Path, tmp_path: Path, hub: HubDouble) -> None:
    content = write_gguf(tmp_path / "q.gguf", SampleModel(vocabulary=100_000)).read_bytes()
    hub.add_file(REPO, FILE, content)
    hub.faults.pace = 0.01
    main, terminal = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "desktop_agent", "models", "pull",
                                f"{REPO}/{FILE}"], cwd=ROOT, stdout=terminal,
                               stderr=subprocess.DEVNULL,
                               env=command_env(home, tmp_path, HF_ENDPOINT=hub.endpoint))
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        shown += chunk
    process.wait(60 * load_factor())
    os.close(main)
    text = shown.decode()
    assert process.returncode == 0
    assert "\r" in text and " of " in text and "MB" in text
    assert "Downloaded to " in text


def test_progress_reads_as_a_person_expects() -> None:
    assert describe_progress(DownloadProgress("m.gguf", 1_200_000_000, 2_500_000_000,
                                              34_000_000, 38.2)) == \
        "1.2 GB of 2.5 GB (48%)  34 MB/s  0:00:38 left"
    assert describe_progress(DownloadProgress("m.gguf", 5_000_000, None, None, None)) == "5 MB"
    assert describe_progress(DownloadProgress("m.gguf", 7_000_000_000, 7_000_000_000, None,
                                              None, verifying=True)) == \
        "checking the checksum… 7.0 GB"
