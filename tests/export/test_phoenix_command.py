"""The Phoenix tests find `phoenix` through THOUGHTLINE_PHOENIX (a virtualenv of its own, as
`.ci/run` installs it) before PATH, and when they cannot, their skip says why."""

from __future__ import annotations

from pathlib import Path

from tests.export.phoenix import phoenix_command


def executable(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    command = folder / "phoenix"
    command.write_text("#!/bin/sh\nexit 0\n")
    command.chmod(0o755)
    return command


def test_the_named_command_wins_over_path(tmp_path: Path) -> None:
    named = executable(tmp_path / "venv" / "bin")
    on_path = executable(tmp_path / "path")
    environment = {"THOUGHTLINE_PHOENIX": str(named), "PATH": str(on_path.parent)}
    assert phoenix_command(environment) == (str(named), "")


def test_path_is_used_without_a_name(tmp_path: Path) -> None:
    on_path = executable(tmp_path / "path")
    assert phoenix_command({"PATH": str(on_path.parent)}) == (str(on_path), "")


def test_a_name_that_is_no_command_skips_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "phoenix"
    command, why = phoenix_command({"THOUGHTLINE_PHOENIX": str(missing), "PATH": ""})
    assert command is None and str(missing) in why


def test_a_failed_install_is_the_reason_given(tmp_path: Path) -> None:
    environment = {
        "PATH": str(tmp_path),
        "THOUGHTLINE_PHOENIX_UNAVAILABLE": "arize-phoenix could not be installed: no network",
    }
    assert phoenix_command(environment) == (
        None,
        "arize-phoenix could not be installed: no network",
    )


def test_nothing_at_all_says_what_to_install(tmp_path: Path) -> None:
    command, why = phoenix_command({"PATH": str(tmp_path)})
    assert command is None and "pip install arize-phoenix" in why
