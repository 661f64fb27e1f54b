"""The packages' names loaded at first use (`contract.first_use`, PEP 562): an unknown name
still raises `AttributeError` naming its module, a lazy name is looked up once, and importing
the packages loads none of the modules behind their lazy names (checked in a fresh
interpreter, so nothing imported by other tests counts). The command line's start is held in
tests/cli/test_fast_start.py."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from thoughtline.contract.first_use import loaded_on_first_use

SERVICE = Path(__file__).resolve().parents[1] / "service"
PACKAGES = ("thoughtline", "thoughtline.inspection", "thoughtline.replay")


@pytest.mark.parametrize("name", PACKAGES)
def test_an_unknown_name_raises_attribute_error_naming_the_module(name: str) -> None:
    package = importlib.import_module(name)
    with pytest.raises(AttributeError, match=rf"^module '{name}' has no attribute 'nothing_here'$"):
        package.nothing_here  # noqa: B018
    assert not hasattr(package, "nothing_here")


@pytest.mark.parametrize("name", PACKAGES)
def test_every_lazy_name_is_its_modules(name: str) -> None:
    package = importlib.import_module(name)
    for attribute, module in package._LOADED_ON_FIRST_USE.items():
        assert getattr(package, attribute) is getattr(importlib.import_module(module), attribute)
        assert attribute in vars(package), attribute  # kept: the hook runs once per name


def test_the_hook_imports_at_first_use_and_keeps_the_value() -> None:
    namespace: dict[str, Any] = {}
    hook = loaded_on_first_use("pkg", namespace, {"dumps": "json"})
    assert hook("dumps") is importlib.import_module("json").dumps
    assert namespace == {"dumps": importlib.import_module("json").dumps}
    with pytest.raises(AttributeError, match="module 'pkg' has no attribute 'loads'"):
        hook("loads")


PROBE = """
import sys
import thoughtline, thoughtline.inspection, thoughtline.replay
before = sorted(name for name in sys.modules if name.startswith("thoughtline"))
{touch}
after = sorted(name for name in sys.modules if name.startswith("thoughtline"))
print(",".join(before), ",".join(after), sep="|")
"""


def _loaded(touch: str) -> tuple[set[str], set[str]]:
    environment = {**os.environ, "PYTHONPATH": str(SERVICE)}
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(touch=touch)],
        capture_output=True,
        text=True,
        check=True,
        env=environment,
    )
    before, after = result.stdout.strip().split("|")
    return set(before.split(",")), set(after.split(","))


def test_importing_the_packages_loads_nothing_behind_their_lazy_names() -> None:
    before, after = _loaded("thoughtline.replay.convert_contents")
    assert before == {
        *PACKAGES,
        "thoughtline.contract",
        "thoughtline.contract.errors",
        "thoughtline.contract.first_use",
        "thoughtline.contract.record",
    }
    # the probe sees a lazy name's module once it is used (so the check above can fail)
    assert {"thoughtline.api", "thoughtline.replay.contents"} <= after - before


def test_a_module_of_the_package_is_still_imported_by_name() -> None:
    """`from thoughtline.replay import parts` is a submodule, not a lazy name."""
    from thoughtline.replay import parts

    assert isinstance(parts, ModuleType)
