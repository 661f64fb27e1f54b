"""`.ci/run` runs the README's test command, then the slow tests, then the Phoenix tests with
the `phoenix` command it installed into a virtualenv of its own, and fails when any run fails;
pytest's 5 ("no tests collected") for the slow or Phoenix run is no failure, and a Phoenix
that cannot be installed fails nothing (its tests are told why they skip). Checked with
stand-ins for python3, pip and pytest, so nothing is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FAKE_PYTHON = """#!/bin/sh
# python3 -m venv .venv: a virtualenv whose pip succeeds and whose pytest exits as told
if [ "$3" = ".venv-phoenix" ]; then
  # the Phoenix virtualenv: its pip installs a `phoenix` command only when told to
  [ "$PHOENIX_INSTALLS" = 1 ] || { echo "no matching distribution for arize-phoenix"; exit 1; }
  mkdir -p .venv-phoenix/bin
  printf '#!/bin/sh\\nexit 0\\n' > .venv-phoenix/bin/pip
  printf '#!/bin/sh\\nexit 0\\n' > .venv-phoenix/bin/phoenix
  chmod +x .venv-phoenix/bin/pip .venv-phoenix/bin/phoenix
  exit 0
fi
mkdir -p .venv/bin
printf '#!/bin/sh\\nexit 0\\n' > .venv/bin/pip
cat > .venv/bin/pytest <<'PYTEST'
#!/bin/sh
echo "pytest $*" >> calls.log
if [ "$2" = "phoenix" ]; then
  echo "phoenix=${THOUGHTLINE_PHOENIX:-}" \\
    "unavailable=${THOUGHTLINE_PHOENIX_UNAVAILABLE:-}" > phoenix.env
  exit "$PHOENIX_STATUS"
fi
if [ "$1" = "-m" ]; then exit "$SLOW_STATUS"; fi
exit "$DEFAULT_STATUS"
PYTEST
chmod +x .venv/bin/pip .venv/bin/pytest
"""


def run_ci(
    tmp_path: Path, default: int, slow: int, phoenix: int, installs: bool
) -> subprocess.CompletedProcess[str]:
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
    stand_ins = tmp_path / "bin"
    stand_ins.mkdir()
    (stand_ins / "python3").write_text(FAKE_PYTHON)
    (stand_ins / "python3").chmod(0o755)
    return subprocess.run(
        ["bash", str(tmp_path / ".ci" / "run")],
        env={
            "PATH": f"{stand_ins}:/usr/bin:/bin",
            "DEFAULT_STATUS": str(default),
            "SLOW_STATUS": str(slow),
            "PHOENIX_STATUS": str(phoenix),
            "PHOENIX_INSTALLS": "1" if installs else "0",
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("default_status", "slow_status", "phoenix_status", "expected"),
    [
        (0, 0, 0, 0),
        (0, 5, 0, 0),
        (0, 0, 5, 0),
        (0, 1, 0, 1),
        (1, 0, 0, 1),
        (2, 5, 0, 2),
        (0, 0, 1, 1),
        (3, 0, 1, 3),
    ],
)
def test_ci_runs_all_three_and_fails_when_any_fails(
    tmp_path: Path, default_status: int, slow_status: int, phoenix_status: int, expected: int
) -> None:
    result = run_ci(tmp_path, default_status, slow_status, phoenix_status, installs=True)
    assert result.returncode == expected, result.stdout + result.stderr
    calls = (tmp_path / "calls.log").read_text().splitlines()
    # the later runs go on even after a failure
    assert calls == ["pytest ", "pytest -m slow", "pytest -m phoenix tests/export"]


def test_the_phoenix_tests_get_the_command_ci_installed(tmp_path: Path) -> None:
    result = run_ci(tmp_path, 0, 0, 0, installs=True)
    assert result.returncode == 0, result.stdout + result.stderr
    told = (tmp_path / "phoenix.env").read_text().strip()
    assert told == f"phoenix={tmp_path}/.venv-phoenix/bin/phoenix unavailable="
    assert "arize-phoenix install exited 0" in result.stdout


def test_a_phoenix_that_cannot_be_installed_fails_nothing_and_says_why(tmp_path: Path) -> None:
    result = run_ci(tmp_path, 0, 0, 0, installs=False)
    assert result.returncode == 0, result.stdout + result.stderr
    told = (tmp_path / "phoenix.env").read_text().strip()
    assert told.startswith("phoenix= unavailable=arize-phoenix could not be installed")
    assert "no matching distribution for arize-phoenix" in told
