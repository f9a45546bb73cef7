"""The openai SDK imported without its ~500 modules of API types, and still whole.

Each check runs in a new interpreter: whether the deferral applies depends on
it being installed before ``openai`` is first imported, which a test process
that has imported it already cannot show.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from desktop_agent.core.wire.sdk_type_packages import imports_only

REPO = Path(__file__).resolve().parents[2]

IMPORT_FACTS = """
import json, sys
{install}
import openai
loaded = [m for m in sys.modules if m.startswith("openai.types.")]
print(json.dumps({{"types": len(loaded), "modules": len(sys.modules)}}))
"""


def _run(code: str) -> str:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _facts(install: str) -> dict[str, int]:
    out = _run(IMPORT_FACTS.format(install=install)).strip().splitlines()[-1]
    facts: dict[str, int] = json.loads(out)
    return facts


def test_importing_the_sdk_leaves_most_api_types_unloaded() -> None:
    plain = _facts("")
    deferred = _facts("from desktop_agent.core.wire.sdk_type_packages import "
                      "defer_type_package_inits; assert defer_type_package_inits()")
    assert plain["types"] > 400  # the SDK as it imports itself: every API type
    assert deferred["types"] < plain["types"] / 2, (plain, deferred)


def test_every_name_of_a_deferred_package_is_still_there() -> None:
    out = _run("""
        from desktop_agent.core.wire.sdk_type_packages import defer_type_package_inits
        defer_type_package_inits()
        import openai
        import openai.types.chat as chat
        from openai.types.responses import Response
        from openai.types import *
        reply = chat.ChatCompletion.model_validate({
            "id": "c1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "hi"}}]})
        print(reply.choices[0].message.content, Response.__name__,
              Completion.__name__, "ChatCompletionChunk" in dir(chat),
              openai.types.Model.__name__)
    """)
    assert out.split() == ["hi", "Response", "Completion", "True", "Model"]


def test_a_package_init_that_does_more_than_import_is_not_deferred() -> None:
    assert imports_only(compile("from .a import B as B\nfrom . import c\n", "init", "exec"))
    assert not imports_only(compile("from .a import B\nB.model_rebuild()\n", "init", "exec"))
    assert not imports_only(compile("from .a import B\nclass C(B): pass\n", "init", "exec"))


def test_too_late_once_the_sdk_is_imported() -> None:
    out = _run("""
        import openai
        from desktop_agent.core.wire.sdk_type_packages import defer_type_package_inits
        print(defer_type_package_inits())
    """)
    assert out.strip() == "False"


def test_a_name_asked_alone_is_the_object_the_whole_init_binds() -> None:
    # Every package under the deferred roots: each name the init re-exports is taken
    # from its own module first, then the whole init runs; both must give one object.
    out = _run("""
        import importlib, json, pkgutil, sys
        from desktop_agent.core.wire import sdk_type_packages as lazy
        lazy.defer_type_package_inits()
        import openai
        checked, differ = 0, []
        for root in ("openai.types", "openai.lib", "openai._vendor.httpx_aiohttp"):
            package = importlib.import_module(root)
            names = [root] + [m.name for m in pkgutil.walk_packages(package.__path__, root + ".")
                              if m.ispkg]
            for name in names:
                try:
                    module = importlib.import_module(name)
                except ImportError:  # an optional extra of the SDK
                    continue
                loader = module.__spec__.loader
                if not isinstance(loader, lazy._DeferredInit):
                    continue
                alone = {n: getattr(module, n) for n in loader._names.sources}
                dir(module)  # runs the whole init
                checked += len(alone)
                differ += [f"{name}.{n}" for n, v in alone.items() if vars(module)[n] is not v]
        print(json.dumps({"checked": checked, "differ": differ}))
    """)
    facts = json.loads(out.strip().splitlines()[-1])
    assert facts["checked"] > 1000 and facts["differ"] == [], facts


def test_the_sdk_is_imported_without_aiohttp() -> None:
    # openai's package for its aiohttp client imports aiohttp (~10 MB) to export the
    # client class; the class alone does not need it until a transport is made.
    out = _run("""
        import sys
        from desktop_agent.core.wire.sdk_type_packages import defer_type_package_inits
        defer_type_package_inits()
        import openai
        print("aiohttp" in sys.modules, openai.DefaultAioHttpClient.__name__)
    """)
    assert out.split() == ["False", "_InstalledAioHttpClient"]


def test_a_name_no_module_gives_is_missing_as_before() -> None:
    out = _run("""
        from desktop_agent.core.wire.sdk_type_packages import defer_type_package_inits
        defer_type_package_inits()
        import openai.types.chat as chat
        try:
            chat.NoSuchType
        except AttributeError as exc:
            print("AttributeError", "NoSuchType" in str(exc))
        from openai.types.chat import completion_create_params
        print(completion_create_params.__name__)
    """)
    assert out.split() == ["AttributeError", "True", "openai.types.chat.completion_create_params"]


def test_a_package_that_names_a_thing_like_one_of_its_modules_is_not_deferred(
        tmp_path: Path) -> None:
    # ``from .helper import helper``: deferred, importing the submodule first would
    # leave the package's ``helper`` the module rather than the function.
    package = tmp_path / "fakesdk" / "types"
    package.mkdir(parents=True)
    (tmp_path / "fakesdk" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("from .helper import helper as helper\n")
    (package / "helper.py").write_text("def helper():\n    return 'function'\n")
    out = _run(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from desktop_agent.core.wire import sdk_type_packages as lazy
        lazy.DEFERRED_ROOTS = ("fakesdk.types",)
        lazy.defer_type_package_inits()
        import fakesdk.types.helper
        import fakesdk.types as types
        print(types.helper())
    """)
    assert out.strip() == "function"


ROOTS_AT_IDLE = """
import json, os, sys
from desktop_agent.core.wire.sdk_type_packages import defer_type_package_inits
defer_type_package_inits()
import httpx2, openai
from desktop_agent.testing import ScriptedServer
with ScriptedServer() as server:
    server.models = ["m1"]
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k")
    import asyncio
    async def ask():
        try:
            return [m.id async for m in client.models.list()]
        finally:
            await client.close()
    models = asyncio.run(ask())
    idle = {name: name in sys.modules for name in (
        "openai.lib.azure", "openai._module_client", "httpcore2._sync.connection_pool")}
    with httpx2.Client() as sync:  # the synchronous pool, deferred until needed
        status = sync.get(server.base_url + "/models").status_code
    azure = openai.AsyncAzureOpenAI(azure_endpoint="https://x.openai.azure.com", api_key="k",
                                    api_version="2024-06-01")
    print(json.dumps({"models": models, "idle": idle, "sync": status,
                      "azure": type(azure).__name__, "version": openai.__version__,
                      "api_key": openai.api_key, "all": "ComputerToolset" in openai.__all__,
                      "module": openai.APIStatusError.__module__}))
"""


def test_the_sdk_root_defers_what_a_request_does_not_use_and_keeps_the_rest() -> None:
    facts = json.loads(_run(ROOTS_AT_IDLE).strip().splitlines()[-1])
    assert facts["models"] == ["m1"]
    assert facts["idle"] == {"openai.lib.azure": False, "openai._module_client": False,
                             "httpcore2._sync.connection_pool": False}, facts
    assert facts["sync"] == 200 and facts["azure"] == "AsyncAzureOpenAI"
    assert facts["version"] and facts["api_key"] is None and facts["all"]
    assert facts["module"] == "openai"  # the whole init ran, as the SDK writes it


def test_a_root_name_asked_alone_is_the_object_the_whole_init_binds() -> None:
    out = _run("""
        import json
        from desktop_agent.core.wire import sdk_type_packages as lazy
        lazy.defer_type_package_inits()
        import httpcore2, openai
        checked, differ = 0, []
        for module in (openai, httpcore2):
            loader = module.__spec__.loader
            assert isinstance(loader, lazy._DeferredInit), module
            alone = {n: getattr(module, n) for n in loader._names.sources}
            dir(module)  # runs the whole init
            checked += len(alone)
            differ += [f"{module.__name__}.{n}" for n, v in alone.items()
                       if vars(module)[n] is not v]
        print(json.dumps({"checked": checked, "differ": differ}))
    """)
    facts = json.loads(out.strip().splitlines()[-1])
    assert facts["checked"] > 100 and facts["differ"] == [], facts


def test_the_sdk_logging_switch_runs_its_init_at_once() -> None:
    out = _run("""
        import os, sys
        os.environ["OPENAI_LOG"] = "info"
        from desktop_agent.core.wire.sdk_type_packages import defer_type_package_inits
        defer_type_package_inits()
        import logging, openai
        print("openai.lib.azure" in sys.modules, logging.getLogger("openai").level)
    """)
    assert out.split() == ["True", str(20)]
