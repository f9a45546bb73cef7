"""Ollama's and LM Studio's own endpoints, replayed on a ScriptedServer from their JSON shapes.

Neither server installs on the machines the tests run on, so their answers
are replayed from where their shapes are written down:

* Ollama, ``docs/api.md`` of github.com/ollama/ollama: "List Local Models"
  (``GET /api/tags``), "Show Model Information" (``POST /api/show``:
  ``modelfile``, ``parameters`` as Modelfile text, ``model_info`` with
  ``<arch>.context_length``, ``capabilities``), "Create a Model"
  (``POST /api/create`` with ``from`` and ``parameters``, answered
  ``{"status": "success"}`` when ``stream`` is false), "List Running Models"
  (``GET /api/ps``, whose ``context_length`` field is in ``api/types.go``
  ``ProcessModelResponse``) and "Version" (``GET /api/version``). Its
  OpenAI-compatible route cuts a prompt over the model's window from the
  front without an error (``server/prompt.go`` ``chatPrompt``), which
  :attr:`ScriptedServer.prompt_windows` plays.
* LM Studio, lmstudio.ai/docs/developer/rest/endpoints ("REST API v0",
  ``GET /api/v0/models``: ``id``, ``type``, ``state``, ``max_context_length``)
  with ``loaded_context_length`` on a loaded model, as LM Studio answers it
  (quoted in zed-industries/zed pull request 25606 and issue 33938), and
  lmstudio.ai/docs/developer/rest/list (``GET /api/v1/models``, LM Studio
  0.4: ``models[]`` with ``key``, ``max_context_length`` and
  ``loaded_instances[].config.context_length``; its page's example answer).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from .scripted_server import ScriptedServer

#: The Ollama release replayed (its default window is 4096 when nothing else says).
OLLAMA_VERSION = "0.12.6"


@dataclass
class _OllamaModel:
    trained: int
    num_ctx: int | None = None
    family: str = "llama"
    capabilities: tuple[str, ...] = ("completion", "tools")


@dataclass
class ReplayedOllama:
    """An Ollama server's model endpoints on ``server``, with a state tests change.

    Attributes:
        server: The scripted server the routes are added to.
        version: What ``/api/version`` answers.
        default_context: The window a model gets when nothing else sizes it.
        created: The bodies ``/api/create`` received, in order.
    """

    server: ScriptedServer
    version: str = OLLAMA_VERSION
    default_context: int = 4096
    created: list[dict[str, Any]] = field(default_factory=list)
    _models: dict[str, _OllamaModel] = field(default_factory=dict)
    _loaded: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.server.models = []  # only what is pulled
        routes = self.server.routes
        routes[("GET", "/api/tags")] = lambda _body: (200, self._tags())
        routes[("POST", "/api/show")] = self._show
        routes[("GET", "/api/ps")] = lambda _body: (200, self._ps())
        routes[("GET", "/api/version")] = (200, {"version": self.version})
        routes[("POST", "/api/create")] = self._create

    def add_model(self, name: str, *, trained: int, num_ctx: int | None = None,
                  family: str = "llama") -> None:
        """Pull a model (``num_ctx``: a ``PARAMETER num_ctx`` in its Modelfile)."""
        self._models[name] = _OllamaModel(trained, num_ctx, family)
        if name not in self.server.models:
            self.server.models.append(name)
        self._cut_windows()

    def load(self, name: str, context: int | None = None) -> None:
        """Load a model as a request would: with ``context``, else the window it would get."""
        self._loaded[name] = context or self.window_of(name)
        self._cut_windows()

    def window_of(self, name: str) -> int:
        """The window a request for ``name`` runs with."""
        model = self._models[name]
        return self._loaded.get(name) or model.num_ctx or self.default_context

    def _cut_windows(self) -> None:
        self.server.prompt_windows.update({n: self.window_of(n) for n in self._models})

    # -- the endpoints ---------------------------------------------------------------
    def _tags(self) -> dict[str, Any]:
        return {"models": [{"name": name, "model": name,
                            "modified_at": "2025-10-01T10:00:00.000000000Z",
                            "size": 2019393189, "digest": _digest(name),
                            "details": self._details(model)}
                           for name, model in self._models.items()]}

    def _show(self, body: Any) -> tuple[int, Any]:
        name = str((body or {}).get("model") or "")
        model = self._models.get(name) or self._models.get(name.removesuffix(":latest"))
        if model is None:
            return 404, {"error": f"model '{name}' not found"}
        parameters = "stop                           \"<|eot_id|>\""
        if model.num_ctx is not None:
            parameters = f"num_ctx                        {model.num_ctx}\n{parameters}"
        return 200, {
            "modelfile": f"# Modelfile generated by \"ollama show\"\nFROM {name}\n",
            "parameters": parameters,
            "template": "{{ .System }}{{ .Prompt }}",
            "details": self._details(model),
            "model_info": {"general.architecture": model.family,
                           f"{model.family}.context_length": model.trained,
                           f"{model.family}.embedding_length": 3072},
            "capabilities": list(model.capabilities),
        }

    def _ps(self) -> dict[str, Any]:
        return {"models": [{"name": name, "model": name, "size": 3338801804,
                            "digest": _digest(name),
                            "details": self._details(self._models[name]),
                            "expires_at": "2025-10-01T10:05:00.000000000Z",
                            "size_vram": 3338801804, "context_length": context}
                           for name, context in self._loaded.items()]}

    def _create(self, body: Any) -> tuple[int, Any]:
        body = body if isinstance(body, dict) else {}
        self.created.append(body)
        source = self._models.get(str(body.get("from") or ""))
        name = str(body.get("model") or "")
        if source is None or not name:
            return 404, {"error": f"model '{body.get('from')}' not found"}
        parameters = body.get("parameters") or {}
        num_ctx = parameters.get("num_ctx") if isinstance(parameters, dict) else None
        self.add_model(name, trained=source.trained,
                       num_ctx=num_ctx if isinstance(num_ctx, int) else source.num_ctx,
                       family=source.family)
        return 200, {"status": "success"}

    @staticmethod
    def _details(model: _OllamaModel) -> dict[str, Any]:
        return {"parent_model": "", "format": "gguf", "family": model.family,
                "families": [model.family], "parameter_size": "3.2B",
                "quantization_level": "Q4_K_M"}


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


def lmstudio_models(*entries: dict[str, Any]) -> dict[str, Any]:
    """An LM Studio ``/api/v0/models`` answer listing ``entries`` (see :func:`lmstudio_model`)."""
    return {"object": "list", "data": list(entries)}


def lmstudio_model(model_id: str, *, max_context: int, loaded_context: int | None = None,
                   model_type: str = "llm") -> dict[str, Any]:
    """One ``/api/v0/models`` entry: ``loaded_context_length`` only when it is loaded."""
    entry: dict[str, Any] = {
        "id": model_id, "object": "model", "type": model_type,
        "publisher": "lmstudio-community", "arch": "llama", "compatibility_type": "gguf",
        "quantization": "Q4_K_M", "state": "loaded" if loaded_context else "not-loaded",
        "max_context_length": max_context}
    if loaded_context:
        entry["loaded_context_length"] = loaded_context
    return entry


def replay_lmstudio(server: ScriptedServer, *entries: dict[str, Any]) -> None:
    """Answer ``/api/v0/models`` on ``server`` with ``entries`` and list them as its models."""
    server.routes[("GET", "/api/v0/models")] = (200, lmstudio_models(*entries))
    server.models = [str(e["id"]) for e in entries]


def replay_lmstudio_v1(server: ScriptedServer, model_key: str, *, max_context: int,
                       loaded_context: int | None = None) -> None:
    """Answer ``/api/v1/models`` only (no v0 list) with one LLM, loaded with ``loaded_context``."""
    instances = [] if loaded_context is None else [
        {"id": model_key, "config": {"context_length": loaded_context}}]
    server.routes[("GET", "/api/v1/models")] = (200, {"models": [{
        "type": "llm", "publisher": "lmstudio-community", "key": model_key,
        "display_name": model_key, "architecture": "gemma3",
        "quantization": {"name": "Q4_0", "bits_per_weight": 4}, "size_bytes": 241410208,
        "params_string": "270M", "loaded_instances": instances,
        "max_context_length": max_context, "format": "gguf",
        "capabilities": {"vision": False, "trained_for_tool_use": False},
        "description": None}]})
    server.models = [model_key]
