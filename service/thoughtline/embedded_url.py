"""Where a `thoughtline serve` in this folder says its embedded Redis listens.

The server writes its URL to `<folder>/url` (`worker.embedded`); the commands that talk to
Redis without a `THOUGHTLINE_REDIS_URL` (`publish`, `tail`, `partitions`) read it here. Apart
from the worker so that `partitions`, which loads redis-py and nothing of the worker, finds it
too: this module needs only the standard library.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Final

DEFAULT_DATA_DIR: Final = Path(".thoughtline") / "redis"
URL_FILE_NAME: Final = "url"


def running_url(data_dir: Path = DEFAULT_DATA_DIR) -> str | None:
    """The URL of an embedded server a `serve` started in `data_dir`, if it still answers."""
    url_file = data_dir / URL_FILE_NAME
    if not url_file.is_file():
        return None
    url = url_file.read_text().strip()
    port = int(url.rsplit(":", 1)[-1].split("/")[0])
    return url if answers(port) else None


def answers(port: int) -> bool:
    """True when a Redis server answers PING on 127.0.0.1:`port` (and is not loading)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(64).startswith(b"+PONG")
    except OSError:
        return False
