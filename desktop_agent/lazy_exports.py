"""A package's names, each imported from its module the first time it is asked for.

The packages whose ``__init__`` re-exports many names (the core, the session layer,
the store, the built-in tools) would otherwise import every module behind them at
once: an idle window or a quick command paid for modules it never used. At the
package root, beside the layers, so that the core and the store can use it too.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` for ``package``: ``homes`` maps a name to its submodule.

    A name found is bound in the package, so later look-ups do not come here again.
    """

    def __getattr__(name: str) -> Any:
        module = homes.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
