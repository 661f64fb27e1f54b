"""What the commands that use Redis share: settings and a client (`connect`), one-line errors
for a Redis that cannot be used (`reaching_redis`), logging.

Only the worker's settings and embedded-Redis lookup, never its FastStream app:
`thoughtline export otlp` connects through this module too, and its process never loads
FastStream.
"""

from __future__ import annotations

import logging
import sys
import urllib.parse
from collections.abc import Callable
from typing import Final, NamedTuple

import redis

from thoughtline.client import command_client
from thoughtline.contract.errors import ThoughtlineError
from thoughtline.worker.embedded import running_url
from thoughtline.worker.settings import (
    Settings,
    SettingsError,
    load_settings,
    unknown_variable_warnings,
)

EXIT_REDIS: Final = 1
EXIT_INVALID_SETTINGS: Final = 2


class Connected(NamedTuple):
    settings: Settings
    client: redis.Redis


def connect() -> Connected | int:
    """Settings and a client: THOUGHTLINE_REDIS_URL, else the embedded Redis `serve` started.
    An exit status instead when there are none (invalid settings: said; no Redis: said)."""
    warn_unknown_variables()
    try:
        settings = load_settings()
    except SettingsError as error:
        invalid_settings(error)
        return EXIT_INVALID_SETTINGS
    url = settings.redis_url or running_url()
    if url is None:
        print(
            "thoughtline: no Redis: set THOUGHTLINE_REDIS_URL, or run `thoughtline serve` "
            "in this folder first",
            file=sys.stderr,
        )
        return EXIT_REDIS
    return Connected(settings, command_client(url))


def reaching_redis(settings: Settings, command: Callable[[], int]) -> int:
    """Run `command`; a Redis that cannot be reached is one line and status 1, no traceback."""
    url = without_password(settings.redis_url or running_url() or "")
    try:
        return command()
    except redis.AuthenticationError as error:
        print(
            f"thoughtline: cannot use Redis at {url}: authentication failed ({one_line(error)})",
            file=sys.stderr,
        )
        return 1
    except (redis.ConnectionError, redis.TimeoutError):
        print(f"thoughtline: cannot reach Redis at {url}", file=sys.stderr)
        return 1
    except (redis.InvalidResponse, redis.ResponseError) as error:  # not a Redis, or it refused
        print(
            f"thoughtline: cannot use Redis at {url}: {type(error).__name__}: {one_line(error)}",
            file=sys.stderr,
        )
        return 1


def credentials_hint(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.password is None and "password" not in parts.query.lower():
        return "this Redis wants a password and THOUGHTLINE_REDIS_URL gives none"
    return "check the user and password in THOUGHTLINE_REDIS_URL"


def without_password(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    user = f"{parts.username}@" if parts.username else ""
    query = "" if "password" in parts.query.lower() else parts.query
    return urllib.parse.urlunsplit(parts._replace(netloc=user + host, query=query))


def warn_unknown_variables() -> None:
    for warning in unknown_variable_warnings():
        print(f"thoughtline: {warning}", file=sys.stderr)


def invalid_settings(error: ThoughtlineError) -> int:
    print(f"thoughtline: {error}", file=sys.stderr)
    return EXIT_INVALID_SETTINGS


def configure_logging(settings: Settings) -> None:
    logging.basicConfig(
        level=settings.log_level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def one_line(error: BaseException) -> str:
    return " ".join(str(error).split())
