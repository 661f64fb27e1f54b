"""`.ci/run` runs the README's test command, then the slow tests, and fails when either fails;
pytest's 5 ("no tests collected") for the slow run is no failure. Checked with stand-ins for
python3, pip and pytest, so nothing is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FAKE_PYTHON = """#!/bin/sh
# python3 -m venv .venv: a virtualenv whose pip succeeds and whose pytest exits as told
mkdir -p .venv/bin
printf '#!/bin/sh\\nexit 0\\n' > .venv/bin/pip
cat > .venv/bin/pytest <<'PYTEST'
#!/bin/sh
echo "pytest $*" >> calls.log
if [ "$1" = "-m" ]; then exit "$SLOW_STATUS"; fi
exit "$DEFAULT_STATUS"
PYTEST
chmod +x .venv/bin/pip .venv/bin/pytest
"""


@pytest.mark.parametrize(
    ("default_status", "slow_status", "expected"),
    [(0, 0, 0), (0, 5, 0), (0, 1, 1), (1, 0, 1), (2, 5, 2)],
)
def test_ci_runs_both_and_fails_when_either_fails(
    tmp_path: Path, default_status: int, slow_status: int, expected: int
) -> None:
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
    stand_ins = tmp_path / "bin"
    stand_ins.mkdir()
    (stand_ins / "python3").write_text(FAKE_PYTHON)
    (stand_ins / "python3").chmod(0o755)
    result = subprocess.run(
        ["bash", str(tmp_path / ".ci" / "run")],
        env={
            "PATH": f"{stand_ins}:/usr/bin:/bin",
            "DEFAULT_STATUS": str(default_status),
            "SLOW_STATUS": str(slow_status),
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == expected, result.stdout + result.stderr
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert calls == ["pytest ", "pytest -m slow"]  # the slow ones run even after a failure
