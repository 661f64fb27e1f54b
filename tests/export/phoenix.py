"""Where the Phoenix tests find Arize Phoenix's `phoenix` command, or why they skip."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping


def phoenix_command(environment: Mapping[str, str]) -> tuple[str | None, str]:
    """The `phoenix` command: THOUGHTLINE_PHOENIX, else the one on PATH; or None and why."""
    named = environment.get("THOUGHTLINE_PHOENIX")
    if named:
        if os.path.isfile(named) and os.access(named, os.X_OK):
            return named, ""
        return None, f"THOUGHTLINE_PHOENIX={named} is not an executable file"
    found = shutil.which("phoenix", path=environment.get("PATH"))
    if found is not None:
        return found, ""
    unavailable = environment.get("THOUGHTLINE_PHOENIX_UNAVAILABLE")
    if unavailable:
        return None, unavailable
    return None, (
        "Arize Phoenix is not installed (no THOUGHTLINE_PHOENIX, no `phoenix` command on "
        "PATH): pip install arize-phoenix to run the export against it"
    )
