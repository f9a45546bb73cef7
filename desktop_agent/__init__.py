"""Desktop Agent: local language models as tool-using agents, with a person approving.

The public SDK is re-exported from :mod:`desktop_agent.core`; the window, the
REST server and scripts all use it::

    from desktop_agent import AgentOptions, query, TextBlock

    async for message in query("Hello", AgentOptions(model="qwen2.5-7b",
                                                     base_url="http://localhost:1234/v1")):
        for block in message.content:
            if isinstance(block, TextBlock):
                print(block.text, end="")
"""

from __future__ import annotations

from importlib import metadata as _metadata

from .core import *  # noqa: F403  (the SDK's public names are this package's API)
from .core import __all__ as _core_all

try:
    __version__ = _metadata.version("desktop-agent")
except _metadata.PackageNotFoundError:  # running from a source tree or a frozen binary
    __version__ = "0.1.0"

__all__ = [*_core_all, "__version__"]
