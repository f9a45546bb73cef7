"""Import the openai SDK without every type of the OpenAI API.

Why: ``import openai`` runs ``openai/types/__init__.py``, and that and the
``__init__`` of each package under ``openai.types`` (``responses``, ``chat``,
``graders``, ...) import every module of the package to re-export its names:
about 500 modules of typed API models, ~38 MB of resident memory and most of
the second the import takes. The SDK's own code imports the few types it uses
from their modules (``openai.types.chat.chat_completion``, ...); the core uses
none of the rest (it sends prebuilt JSON and reads raw bytes, see
:mod:`~desktop_agent.core.wire.model_client`).

What was weighed: the models are not the cost of validators being built,
pydantic already builds openai's models lazily (651 model classes after the
import, 2 with a validator); the cost is the modules and classes themselves.
openai has no switch to skip the re-exports, and ``importlib.util.LazyLoader``
does not help (the first submodule import asks the package for ``__path__``,
which loads it whole).

So :func:`defer_type_package_inits` puts a finder in front of the import
system for ``openai.types`` and the packages under it: such a package is
created with its ``__path__`` (its submodules import as usual) and its
``__init__`` runs when a name is first asked of the package itself
(``openai.types.chat.ChatCompletion``, ``from openai.types.chat import X``,
``dir()``, ``from ... import *``), through a module ``__getattr__`` (PEP 562).
Only an ``__init__`` whose code does nothing but import and bind names is
deferred (checked on its bytecode); any other runs at once, as before, so a
later SDK whose package init does more is imported as the SDK wrote it.

Measured (``python -c "import openai"``, anonymous memory, Python 3.11,
openai 3.57): 37.7 MB and 883 modules without, 25.7 MB and 456 modules with;
in the idle window (``bench/startup.py``), see the README's figures.
"""

from __future__ import annotations

import dis
import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Sequence
from types import CodeType, ModuleType
from typing import Any

#: The packages whose ``__init__`` waits for a name to be asked (this one and those under it).
DEFERRED_ROOT = "openai.types"

#: Bytecode of a package ``__init__`` that only imports names and binds them.
_IMPORT_ONLY = frozenset({
    "RESUME", "NOP", "LOAD_CONST", "IMPORT_NAME", "IMPORT_FROM", "IMPORT_STAR",
    "STORE_NAME", "POP_TOP", "RETURN_VALUE", "RETURN_CONST", "CACHE", "EXTENDED_ARG",
    "SWAP", "COPY",
})

#: Package inits run by one thread at a time (two threads asking at once run it once).
_RUNNING = threading.RLock()


def imports_only(code: CodeType) -> bool:
    """Whether a module's code only imports names and binds them (no calls, no classes)."""
    return all(instruction.opname in _IMPORT_ONLY for instruction in dis.get_instructions(code))


def _deferred(name: str) -> bool:
    return name == DEFERRED_ROOT or name.startswith(DEFERRED_ROOT + ".")


class _DeferredInit(importlib.abc.Loader):
    """Makes the package as its own loader would; runs its ``__init__`` at the first name asked."""

    def __init__(self, loader: Any, code: CodeType) -> None:
        self._loader = loader
        self._code = code

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        create = getattr(self._loader, "create_module", None)
        module: ModuleType | None = create(spec) if create is not None else None
        return module

    def exec_module(self, module: ModuleType) -> None:
        code = self._code
        namespace = module.__dict__

        def run_init() -> None:
            with _RUNNING:
                if namespace.get("__getattr__") is not deferred_getattr:
                    return  # another thread ran it meanwhile
                del namespace["__getattr__"], namespace["__dir__"]
                exec(code, namespace)

        def deferred_getattr(name: str) -> Any:
            if name.startswith("__") and name != "__all__":
                raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")
            run_init()
            return getattr(module, name)

        def deferred_dir() -> list[str]:
            run_init()
            return sorted(namespace)

        namespace["__getattr__"] = deferred_getattr
        namespace["__dir__"] = deferred_dir


class _TypePackageFinder(importlib.abc.MetaPathFinder):
    """Finds ``openai.types`` packages through the other finders and defers their ``__init__``."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if not _deferred(fullname):
            return None
        spec: importlib.machinery.ModuleSpec | None = None
        for finder in sys.meta_path:  # whoever would have found it (PyInstaller's, or the path)
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        if spec is None or spec.submodule_search_locations is None or spec.loader is None:
            return spec  # a plain module (or nothing): imported as usual
        get_code = getattr(spec.loader, "get_code", None)
        code = get_code(fullname) if get_code is not None else None
        if code is None or not imports_only(code):
            return spec
        spec.loader = _DeferredInit(spec.loader, code)
        return spec


def defer_type_package_inits() -> bool:
    """Install the finder (once); False when openai is imported already (too late to matter)."""
    if any(isinstance(finder, _TypePackageFinder) for finder in sys.meta_path):
        return True
    if DEFERRED_ROOT in sys.modules:
        return False
    sys.meta_path.insert(0, _TypePackageFinder())
    return True
