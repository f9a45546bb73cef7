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
