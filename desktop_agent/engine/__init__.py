"""Qt-free: the models this machine can run itself, and getting more of them.

The model library (GGUF files found in LM Studio's, Ollama's, Hugging Face's and
llama.cpp's folders, read from their headers, with whether each fits in memory), a
short catalogue of small tool-calling models, resumable downloads from the
Hugging Face hub, and llama.cpp serving one of them in a child process
(:class:`LocalModel`, :class:`RunningModels`). The window, ``serve --model`` and SDK
scripts use it; it knows no front end, no conversation and no data folder of its own
(callers pass the folders it needs)::

    from desktop_agent.engine import ModelLibrary, best_pick, download_model_file

Every name loads its module on first use (PEP 562): ``gguf`` (and numpy) and
``huggingface_hub`` are imported only when a scan, a header read or a download asks
for them, so importing this package costs a window or a script nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from desktop_agent.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from desktop_agent.engine.catalog import CATALOG as CATALOG
    from desktop_agent.engine.catalog import CatalogModel as CatalogModel
    from desktop_agent.engine.catalog import best_pick as best_pick
    from desktop_agent.engine.chat_template import (
        template_supports_tools as template_supports_tools,
    )
    from desktop_agent.engine.download_progress import DownloadProgress as DownloadProgress
    from desktop_agent.engine.downloads import DownloadRequest as DownloadRequest
    from desktop_agent.engine.downloads import download_model as download_model
    from desktop_agent.engine.downloads import download_model_file as download_model_file
    from desktop_agent.engine.errors import ChecksumMismatchError as ChecksumMismatchError
    from desktop_agent.engine.errors import CorruptModelError as CorruptModelError
    from desktop_agent.engine.errors import DiskFullError as DiskFullError
    from desktop_agent.engine.errors import DownloadCancelledError as DownloadCancelledError
    from desktop_agent.engine.errors import DownloadError as DownloadError
    from desktop_agent.engine.errors import DownloadInterruptedError as DownloadInterruptedError
    from desktop_agent.engine.errors import EngineCrashed as EngineCrashed
    from desktop_agent.engine.errors import EngineError as EngineError
    from desktop_agent.engine.errors import EngineNotInstalled as EngineNotInstalled
    from desktop_agent.engine.errors import EnginePortTaken as EnginePortTaken
    from desktop_agent.engine.errors import EngineStartTimeout as EngineStartTimeout
    from desktop_agent.engine.errors import EngineStopped as EngineStopped
    from desktop_agent.engine.errors import GatedModelError as GatedModelError
    from desktop_agent.engine.errors import HubEntryNotFoundError as HubEntryNotFoundError
    from desktop_agent.engine.errors import MissingSplitPartError as MissingSplitPartError
    from desktop_agent.engine.errors import ModelFileError as ModelFileError
    from desktop_agent.engine.errors import NotGgufError as NotGgufError
    from desktop_agent.engine.errors import TruncatedModelError as TruncatedModelError
    from desktop_agent.engine.errors import UnknownArchitecture as UnknownArchitecture
    from desktop_agent.engine.errors import UnreadableModelError as UnreadableModelError
    from desktop_agent.engine.errors import UnsupportedGgufError as UnsupportedGgufError
    from desktop_agent.engine.fit import FitEstimate as FitEstimate
    from desktop_agent.engine.fit import FitVerdict as FitVerdict
    from desktop_agent.engine.fit import estimate_fit as estimate_fit
    from desktop_agent.engine.gguf_info import ModelInfo as ModelInfo
    from desktop_agent.engine.gguf_info import read_model_info as read_model_info
    from desktop_agent.engine.library import LibraryEntry as LibraryEntry
    from desktop_agent.engine.library import ModelLibrary as ModelLibrary
    from desktop_agent.engine.machine import MachineMemory as MachineMemory
    from desktop_agent.engine.machine import machine_memory as machine_memory
    from desktop_agent.engine.machine import physical_cores as physical_cores
    from desktop_agent.engine.model_folders import ModelFolders as ModelFolders
    from desktop_agent.engine.model_folders import ModelSource as ModelSource
    from desktop_agent.engine.run_settings import RunSettings as RunSettings
    from desktop_agent.engine.runner import LocalModel as LocalModel
    from desktop_agent.engine.running_models import RunningModels as RunningModels

_HOMES: dict[str, str] = {
    "EngineError": "errors",
    "ModelFileError": "errors",
    "NotGgufError": "errors",
    "TruncatedModelError": "errors",
    "CorruptModelError": "errors",
    "MissingSplitPartError": "errors",
    "DownloadError": "errors",
    "GatedModelError": "errors",
    "HubEntryNotFoundError": "errors",
    "DownloadInterruptedError": "errors",
    "DiskFullError": "errors",
    "ChecksumMismatchError": "errors",
    "DownloadCancelledError": "errors",
    "UnreadableModelError": "errors",
    "UnsupportedGgufError": "errors",
    "EngineNotInstalled": "errors",
    "UnknownArchitecture": "errors",
    "EnginePortTaken": "errors",
    "EngineStartTimeout": "errors",
    "EngineStopped": "errors",
    "EngineCrashed": "errors",
    "ModelInfo": "gguf_info",
    "read_model_info": "gguf_info",
    "template_supports_tools": "chat_template",
    "MachineMemory": "machine",
    "machine_memory": "machine",
    "physical_cores": "machine",
    "FitEstimate": "fit",
    "FitVerdict": "fit",
    "estimate_fit": "fit",
    "ModelLibrary": "library",
    "LibraryEntry": "library",
    "ModelFolders": "model_folders",
    "ModelSource": "model_folders",
    "CATALOG": "catalog",
    "CatalogModel": "catalog",
    "best_pick": "catalog",
    "DownloadRequest": "downloads",
    "download_model_file": "downloads",
    "download_model": "downloads",
    "DownloadProgress": "download_progress",
    "LocalModel": "runner",
    "RunningModels": "running_models",
    "RunSettings": "run_settings",
}

__all__ = [
    "CATALOG",
    "CatalogModel",
    "ChecksumMismatchError",
    "CorruptModelError",
    "DiskFullError",
    "DownloadCancelledError",
    "DownloadError",
    "DownloadInterruptedError",
    "DownloadProgress",
    "DownloadRequest",
    "EngineCrashed",
    "EngineError",
    "EngineNotInstalled",
    "EnginePortTaken",
    "EngineStartTimeout",
    "EngineStopped",
    "FitEstimate",
    "FitVerdict",
    "GatedModelError",
    "HubEntryNotFoundError",
    "LibraryEntry",
    "LocalModel",
    "MachineMemory",
    "MissingSplitPartError",
    "ModelFileError",
    "ModelFolders",
    "ModelInfo",
    "ModelLibrary",
    "ModelSource",
    "NotGgufError",
    "RunSettings",
    "RunningModels",
    "TruncatedModelError",
    "UnknownArchitecture",
    "UnreadableModelError",
    "UnsupportedGgufError",
    "best_pick",
    "download_model",
    "download_model_file",
    "estimate_fit",
    "machine_memory",
    "physical_cores",
    "read_model_info",
    "template_supports_tools",
]

__getattr__ = lazy_exports(__name__, _HOMES)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
