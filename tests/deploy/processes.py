"""Child processes and HTTP on loopback, for the live Prometheus test."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def get(url: str, timeout: float = 5) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        body: bytes = response.read()
        return body


def wait_until(check: Callable[[], bool], seconds: float, what: str) -> None:
    """Poll `check` until it holds; connection errors mean "not yet"."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except OSError:
            pass
        time.sleep(0.25)
    raise AssertionError(f"timed out after {seconds}s waiting for {what}")


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM first, as Kubernetes does: the worker drains its batch in flight."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
