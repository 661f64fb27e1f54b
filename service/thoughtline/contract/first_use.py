"""Names a package imports at first use (PEP 562), so importing the package loads none of the
modules behind them. In the lowest layer, where every package's `__init__.py` may import it."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def loaded_on_first_use(
    package: str, namespace: dict[str, Any], modules: Mapping[str, str]
) -> Callable[[str], Any]:
    """The package's module `__getattr__`: a name of `modules` is imported from its module and
    kept in `namespace` (the package's `globals()`, so it is looked up once); any other name
    raises `AttributeError` naming the package, as Python's own lookup would."""

    def load(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return load
