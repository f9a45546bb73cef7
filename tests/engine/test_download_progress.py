"""Progress figures from byte counts, and the hub-client functions the downloads lean on."""

from __future__ import annotations

import inspect

from huggingface_hub import file_download

from desktop_agent.engine.download_progress import DownloadProgress, ProgressMeter

MB = 1_000_000


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_speed_and_time_left_follow_the_recent_bytes() -> None:
    clock, reports = Clock(), []
    meter = ProgressMeter("m.gguf", reports.append, clock)
    meter.start(done=20 * MB, total=100 * MB)  # a resumed download starts above zero
    for _ in range(4):
        clock.now += 1.0
        meter.advance(10 * MB)

    last = reports[-1]
    assert last == DownloadProgress("m.gguf", 60 * MB, 100 * MB, 10 * MB, 4.0)


def test_reports_are_at_most_ten_a_second_but_the_last_one_always_comes() -> None:
    clock, reports = Clock(), []
    meter = ProgressMeter("m.gguf", reports.append, clock)
    meter.start(done=0, total=10)
    for _ in range(10):
        clock.now += 0.001
        meter.advance(1)

    assert [r.downloaded_bytes for r in reports] == [0, 10]


def test_the_hub_client_still_has_the_functions_downloads_are_built_on() -> None:
    # downloads.py streams with file_download.http_get into a partial of its own (the hub's
    # hf_hub_download keeps none since 1.18) and places it as <cache>/<repo folder>/blobs/<etag>.
    parameters = inspect.signature(file_download.http_get).parameters
    for name in ("url", "temp_file", "resume_size", "headers", "expected_size",
                 "displayed_filename", "tqdm_class"):
        assert name in parameters, name
    assert file_download.repo_folder_name(repo_id="Qwen/Qwen3-4B-GGUF", repo_type="model") == \
        "models--Qwen--Qwen3-4B-GGUF"
