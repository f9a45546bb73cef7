"""Import the openai SDK without the parts of it the core never uses.

Why: ``import openai`` runs ``openai/types/__init__.py``, and that and the
``__init__`` of each package under ``openai.types`` (``responses``, ``chat``,
``graders``, ...) import every module of the package to re-export its names:
about 500 modules of typed API models, ~38 MB of resident memory and most of
the second the import takes. The SDK's own code imports the few types it uses
from their modules (``openai.types.chat.chat_completion``, ...) or asks a
package for a name or two; the core uses none of the rest (it sends prebuilt
JSON and reads raw bytes, see :mod:`~desktop_agent.core.wire.model_client`).
Two more packages re-export what the core never uses: ``openai.lib`` (its
``pydantic_function_tool`` helpers pull in ~80 modules of chat types, ~1.3 MB)
and ``openai._vendor.httpx_aiohttp``, whose ``__init__`` imports the aiohttp
transport, and with it aiohttp and its seven packages (~10 MB of an idle
window), only to export the client class the SDK asks for when it starts.

What was weighed: the models are not the cost of validators being built,
pydantic already builds openai's models lazily (61 model classes after the
import and a discovery request, 2 with a validator); the cost is the modules
and classes themselves. openai has no switch to skip the re-exports, and
``importlib.util.LazyLoader`` does not help (the first submodule import asks
the package for ``__path__``, which loads it whole).

So :func:`defer_type_package_inits` puts a finder in front of the import
system for the packages under :data:`DEFERRED_ROOTS`: such a package is
created with its ``__path__`` (its submodules import as usual) and nothing
else. A name asked of it (``from openai.types.chat import ChatCompletion``,
``openai.types.Model``) comes from the one module the package ``__init__``
would have imported it from, through a module ``__getattr__`` (PEP 562); the
whole ``__init__`` runs when that cannot say (``dir()``, ``from ... import *``,
``__all__``, a name the ``__init__`` binds otherwise). Only an ``__init__``
whose code does nothing but import names and bind them is deferred (checked on
its bytecode); any other runs at once, as before, so a later SDK whose package
init does more is imported as the SDK wrote it. So does the ``__init__`` of a
package one of whose names is also one of its submodules (``from .x import x``):
importing that submodule before the name is asked would leave the module where
the ``__init__`` binds something else.

Two top-level packages, :data:`ROOT_PACKAGES`, are deferred although their
``__init__`` does more than import: ``openai``'s, besides the client classes,
imports the Azure and Bedrock clients, the providers, the module-level client,
the legacy responses and the function-tool helpers (about 20 modules the window
never uses) and sets up logging from ``OPENAI_LOG``; ``httpcore2``'s imports the
synchronous connection pool, proxies and backends next to the asynchronous ones
(httpx2 imports ``httpcore2`` only when a transport is made, and the window's
transports are asynchronous). Such a package hands out the names its ``__init__``
takes with ``from M import A`` as above, and a submodule the ``__init__`` does not
bind (``from . import _exceptions`` in the SDK's own modules) as the import system
would; any other name (``openai.api_key``, ``__all__``, ``dir()``, a name bound
twice or to a proxy of a submodule, like ``openai.resources``) runs the whole
``__init__``, which then also sets the ``__module__`` of the classes it exports and
the logging. ``openai``'s is run at once when ``OPENAI_LOG`` is set, so the SDK's
debug logging is there from the start.

On an openai (or httpcore2) upgrade: the hook relies on the ``__init__`` files of
``openai``, ``httpcore2`` and the packages under :data:`DEFERRED_ROOTS` being runs of
imports. It reads their bytecode first, so a changed ``__init__`` is imported whole:
correct, but heavier, and nothing else would say so. Before raising openai's pin in
``pyproject.toml``, run ``tests/core/test_openai_bends.py`` (it fails, naming the
packages, when one a chat loads is no longer deferred) and
``tests/core/test_sdk_type_packages.py`` (every name still the object the SDK's own
``__init__`` binds).

Measured (``python -c "import openai"``, anonymous memory, Python 3.11,
openai 3.57): 37.7 MB and 883 modules without, 25.7 MB and 456 modules with
the type packages deferred whole. Names taken one by one, and ``openai.lib``
and the vendored aiohttp client package deferred too: a window whose server
search found a model server (``bench/startup.py --rss-only``, from source)
129.4 -> 128.4 MB, five tabs 139.4 -> 138.7 MB, with aiohttp still imported when
the client is made (see :mod:`~desktop_agent.core.wire.model_client`). The two
root packages deferred (``bench/startup.py``'s idle RSS, from compiled source, two runs
each, alternating): a window whose search found a model server 117.9-118.2 ->
117.0-117.3 MB, five tabs 122.2-122.9 -> 121.2-121.7 MB (four runs each).
"""

from __future__ import annotations

import dis
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import itertools
import os
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import CodeType, ModuleType
from typing import Any

#: The packages whose ``__init__`` waits for a name to be asked (these and those under them).
DEFERRED_ROOTS = ("openai.types", "openai.lib", "openai._vendor")

#: Top-level packages whose ``__init__`` does more than import; see the module docstring.
ROOT_PACKAGES = ("openai", "httpcore2")

#: Bytecode of a package ``__init__`` that only imports names and binds them (and constants).
_IMPORT_ONLY = frozenset({
    "RESUME", "NOP", "LOAD_CONST", "IMPORT_NAME", "IMPORT_FROM", "IMPORT_STAR",
    "STORE_NAME", "POP_TOP", "RETURN_VALUE", "RETURN_CONST", "CACHE", "EXTENDED_ARG",
    "SWAP", "COPY", "BUILD_LIST", "BUILD_TUPLE", "LIST_EXTEND",
})

#: Package inits run by one thread at a time (two threads asking at once run it once).
_RUNNING = threading.RLock()

Source = tuple[int, str, str]
"""Where a package init takes a name from: (relative level, module, attribute)."""


def imports_only(code: CodeType) -> bool:
    """Whether a module's code only imports names and binds them (no calls, no classes)."""
    return all(instruction.opname in _IMPORT_ONLY for instruction in dis.get_instructions(code))


@dataclass(frozen=True)
class Reexports:
    """What an import-only package ``__init__`` binds.

    Attributes:
        sources: Each name bound by ``from M import A [as name]``, and where from.
        bound_otherwise: Names bound any other way (``import x.y``, a constant,
            ``__all__``, twice), or with ``from M import *`` (None: not known).
    """

    sources: dict[str, Source]
    bound_otherwise: frozenset[str] | None


def reexports(code: CodeType) -> Reexports:
    """Where each name an import-only ``__init__`` binds comes from."""
    return _reexports(dis.get_instructions(code))


def _reexports(instructions: Iterable[dis.Instruction]) -> Reexports:
    sources: dict[str, Source] = {}
    unsure: set[str] = set()
    star = False
    consts: list[Any] = []
    importing: tuple[int, str] | None = None  # the ``from`` import being bound
    attribute: str | None = None
    for instruction in instructions:
        op = instruction.opname
        if op == "IMPORT_NAME":
            level, fromlist = (consts[-2], consts[-1]) if len(consts) >= 2 else (None, None)
            importing = (level, instruction.argval) \
                if isinstance(level, int) and isinstance(fromlist, tuple) else None
            attribute = None
        elif op == "IMPORT_FROM":
            attribute = instruction.argval
        elif op == "IMPORT_STAR":
            star = True
        elif op == "STORE_NAME":
            name = instruction.argval
            if importing is None or attribute is None or name in sources:
                unsure.add(name)
            else:
                sources[name] = (importing[0], importing[1], attribute)
            attribute = None
        elif op == "POP_TOP":
            importing = attribute = None
        consts = [*consts[-1:], instruction.argval] if op == "LOAD_CONST" else []
    return Reexports({name: source for name, source in sources.items() if name not in unsure},
                     None if star else frozenset(unsure))


def _deferred(name: str) -> bool:
    return any(name == root or name.startswith(root + ".") for root in DEFERRED_ROOTS)


def _find_spec(finder: object, fullname: str, path: Sequence[str] | None,
               target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
    """``fullname``'s spec from the finders after ``finder`` (whoever would have found it)."""
    for other in sys.meta_path:  # PyInstaller's, or the path
        find = getattr(other, "find_spec", None)
        if other is finder or find is None:
            continue
        spec: importlib.machinery.ModuleSpec | None = find(fullname, path, target)
        if spec is not None:
            return spec
    return None


def _submodule_names(finder: object, package: str, path: Sequence[str],
                     names: Sequence[str]) -> list[str]:
    """Which of ``names`` are also submodules of ``package``."""
    return [name for name in names
            if _find_spec(finder, f"{package}.{name}", path) is not None]


class _DeferredInit(importlib.abc.Loader):
    """Makes the package as its own loader would; its names come when first asked."""

    def __init__(self, loader: Any, code: CodeType, names: Reexports,
                 binds: frozenset[str] | None = None) -> None:
        self._loader = loader
        self._code = code
        self._names = names
        self._binds = binds

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        create = getattr(self._loader, "create_module", None)
        module: ModuleType | None = create(spec) if create is not None else None
        return module

    def exec_module(self, module: ModuleType) -> None:
        code, sources, otherwise = self._code, self._names.sources, self._names.bound_otherwise
        binds = self._binds
        namespace = module.__dict__
        package = module.__name__

        def deferred() -> bool:
            return namespace.get("__getattr__") is deferred_getattr

        def run_init() -> None:
            with _RUNNING:
                if not deferred():
                    return  # another thread ran it meanwhile
                del namespace["__getattr__"], namespace["__dir__"]
                exec(code, namespace)

        def from_source(name: str, source: Source) -> Any:
            level, module_name, attribute = source
            where = importlib.util.resolve_name("." * level + module_name, package) \
                if level else module_name
            if where == package:  # ``from . import x``: the submodule
                return importlib.import_module(f"{package}.{attribute}")
            origin = importlib.import_module(where)
            try:
                value = getattr(origin, attribute)
            except AttributeError:  # a submodule not imported yet, as ``from`` imports it
                value = importlib.import_module(f"{where}.{attribute}")
            with _RUNNING:
                if deferred():
                    namespace[name] = value  # the next ask finds it without this hook
            return value

        def deferred_getattr(name: str) -> Any:
            if name.startswith("__") and name != "__all__" and name not in sources:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            source = sources.get(name)
            if source is not None and deferred():
                return from_source(name, source)
            if otherwise is not None and name not in otherwise and name != "__all__" \
                    and deferred():
                # the init binds no such name: a submodule (``from . import chat``), or nothing
                try:
                    return importlib.import_module(f"{package}.{name}")
                except ModuleNotFoundError as exc:
                    if exc.name != f"{package}.{name}":
                        raise
                    raise AttributeError(f"module {package!r} has no attribute {name!r}") \
                        from None
            if binds is not None and name not in binds and deferred() \
                    and importlib.util.find_spec(f"{package}.{name}") is not None:
                # a submodule the init does not bind (``from . import _exceptions``
                # in the SDK's own modules): what the import system binds anyway
                return importlib.import_module(f"{package}.{name}")
            run_init()
            return getattr(module, name)

        def deferred_dir() -> list[str]:
            run_init()
            return sorted(namespace)

        namespace["__getattr__"] = deferred_getattr
        namespace["__dir__"] = deferred_dir


def _root_names(finder: object, spec: importlib.machinery.ModuleSpec,
                code: CodeType) -> Reexports:
    """What a root package's ``__init__`` may hand out before it runs.

    The names its opening run of imports takes with ``from M import A``: a
    module imported there runs as it would under the whole ``__init__``, with
    nothing but imports before it (one imported later may need what the init
    makes first: ``openai._module_client`` asks the package for a function the
    init defines). A name bound again later, or that is also a submodule
    (``resources``, bound to a proxy of the subpackage), is left to the whole
    ``__init__``, and so is every name bound any other way (``bound_otherwise``
    None); ``from . import types`` binds the submodule itself.
    """
    instructions = list(dis.get_instructions(code))
    opening = list(itertools.takewhile(  # (a module with annotations sets their dict up first)
        lambda i: i.opname in _IMPORT_ONLY or i.opname == "SETUP_ANNOTATIONS", instructions))
    later = {i.argval for i in instructions[len(opening):]
             if i.opname in ("STORE_NAME", "STORE_GLOBAL")}
    found = _reexports(opening)
    names = Reexports({name: source for name, source in found.sources.items()
                       if name not in later}, None)
    from_package = {name for name, (level, module, attribute) in names.sources.items()
                    if level == 1 and not module and attribute == name}
    clashing = set(_submodule_names(finder, spec.name, spec.submodule_search_locations or [],
                                    [name for name in names.sources if name not in from_package]))
    return Reexports({name: source for name, source in names.sources.items()
                      if name not in clashing}, None)


def _defer_root(finder: object, fullname: str, path: Sequence[str] | None,
                target: ModuleType | None) -> importlib.machinery.ModuleSpec | None:
    """The SDK's root package, its ``__init__`` run when a name it binds otherwise is asked."""
    spec = _find_spec(finder, fullname, path, target)
    if spec is None or spec.submodule_search_locations is None or spec.loader is None \
            or (fullname == "openai" and os.environ.get("OPENAI_LOG")):  # set up by its init
        return spec
    get_code = getattr(spec.loader, "get_code", None)
    code = get_code(fullname) if get_code is not None else None
    if code is None:
        return spec
    binds = frozenset(instruction.argval for instruction in dis.get_instructions(code)
                      if instruction.opname in ("STORE_NAME", "STORE_GLOBAL"))
    spec.loader = _DeferredInit(spec.loader, code, _root_names(finder, spec, code), binds)
    return spec


class _TypePackageFinder(importlib.abc.MetaPathFinder):
    """Finds the deferred packages through the other finders and defers their ``__init__``."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname in ROOT_PACKAGES:
            return _defer_root(self, fullname, path, target)
        if not _deferred(fullname):
            return None
        spec = _find_spec(self, fullname, path, target)
        if spec is None or spec.submodule_search_locations is None or spec.loader is None:
            return spec  # a plain module (or nothing): imported as usual
        get_code = getattr(spec.loader, "get_code", None)
        code = get_code(fullname) if get_code is not None else None
        if code is None or not imports_only(code):
            return spec
        names = reexports(code)
        if _submodule_names(self, fullname, spec.submodule_search_locations, list(names.sources)):
            return spec  # see the module docstring: its init runs at once
        spec.loader = _DeferredInit(spec.loader, code, names)
        return spec


def defer_type_package_inits() -> bool:
    """Install the finder (once); False when openai is imported already (too late to matter)."""
    if any(isinstance(finder, _TypePackageFinder) for finder in sys.meta_path):
        return True
    if any(root in sys.modules for root in (*ROOT_PACKAGES, *DEFERRED_ROOTS)):
        return False
    sys.meta_path.insert(0, _TypePackageFinder())
    return True
