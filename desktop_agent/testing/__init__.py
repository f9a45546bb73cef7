"""Test support that ships with the app: a scripted OpenAI-compatible server.

It lives in the package (not under tests/) because ``desktop-agent
--smoke-test`` starts one to prove the frozen binary works end to end.
"""

from . import script
from .scripted_server import ScriptedServer

__all__ = ["ScriptedServer", "script"]
