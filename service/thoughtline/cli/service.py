"""The service commands of `thoughtline`: serve, publish, tail, demo, asyncapi.

    thoughtline serve                 one worker; no THOUGHTLINE_REDIS_URL: an embedded Redis
    thoughtline publish FILE...       XADD raw payloads (format detected, or --format)
    thoughtline tail [--json]         follow normalized records (or --dead: dead letters)
    thoughtline demo                  embedded Redis, bundled samples, records and counters
    thoughtline asyncapi [--write F]  the AsyncAPI document of the worker

Invalid settings print one line naming the variable and exit with status 2; a `THOUGHTLINE_*`
variable that is no setting (a typo) is one warning line each. Exit status of `serve`:

    0  stopped by SIGTERM / SIGINT
    1  Redis cannot be used: unreachable at start (after 30 s of retries), authentication
       failed (at once, no retries), a command refused, or the embedded Redis would not start
    2  invalid settings
    3  the consumer group vanished under the reader (Redis restarted empty): restart it
    4  the metrics port cannot be listened on (THOUGHTLINE_METRICS_HOST / _PORT)
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
from pathlib import Path
from typing import Final, cast

import redis
from redis.cluster import ClusterPipeline

from thoughtline.cli import console
from thoughtline.cli.connecting import EXIT_REDIS
from thoughtline.cli.connecting import configure_logging as _configure_logging
from thoughtline.cli.connecting import connect as _connect
from thoughtline.cli.connecting import credentials_hint as _credentials_hint
from thoughtline.cli.connecting import invalid_settings as _invalid_settings
from thoughtline.cli.connecting import one_line as _one_line
from thoughtline.cli.connecting import reaching_redis as _reaching_redis
from thoughtline.cli.connecting import warn_unknown_variables as _warn_unknown_variables
from thoughtline.cli.connecting import without_password as _without_password
from thoughtline.cli.names import SERVICE_COMMANDS, naming_the_flag, unreadable
from thoughtline.client import Client
from thoughtline.contract.errors import NormalizeError, UnknownFormatError
from thoughtline.contract.record import KNOWN_FORMATS
from thoughtline.embedded_url import DEFAULT_DATA_DIR
from thoughtline.providers.detection import detect_format, looks_like_stream
from thoughtline.worker.app import MetricsPortError, StreamsResponse
from thoughtline.worker.embedded import EmbeddedRedis, join_or_start
from thoughtline.worker.settings import (
    Settings,
    SettingsError,
    load_settings,
    settings_help,
)

EXIT_METRICS_PORT: Final = 4
TAIL_BLOCK_MS: Final = 1000
"""How long `tail` waits in one read for more (shared among the slots on a cluster)."""
PIPELINE_ENTRIES: Final = 100
"""XADDs sent per round trip; a publish of more than 20 files shows progress at each."""
Subparsers = argparse._SubParsersAction


def add_commands(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    serve = subparsers.add_parser(
        "serve",
        help=SERVICE_COMMANDS["serve"],
        description="Run one worker: read the input stream in the consumer group, publish a "
        "record or a dead letter per entry. Configured by environment variables only; with "
        "THOUGHTLINE_REDIS_URL unset it starts an embedded Redis. Exit status: 0 stopped by a "
        "signal, 1 Redis cannot be used, 2 invalid settings, 3 the consumer group vanished, "
        "4 the metrics port is taken.",
        epilog=settings_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA_DIR,
        help="embedded Redis data folder (default: .thoughtline/redis)",
    )
    serve.set_defaults(command=run_serve)

    publish = subparsers.add_parser("publish", help=SERVICE_COMMANDS["publish"])
    publish.add_argument("files", nargs="+", metavar="FILE", help="payload files; - is stdin")
    publish.add_argument("--format", choices=KNOWN_FORMATS, help="skip format detection")
    publish.add_argument("--id", help="the entry id (default: the file name)")
    publish.add_argument("--meta", help="a JSON object passed through into the record")
    publish.add_argument(
        "--kind",
        choices=("response", "request"),
        default=None,
        help="response (the default): a provider response to normalize; request: a provider "
        "request body your application is about to send, checked for reasoning sent back as "
        "text (offline: `thoughtline inspect FILE`)",
    )
    publish.add_argument("--deltas", action="store_true", help="also publish one delta per chunk")
    publish.set_defaults(command=run_publish)

    tail = subparsers.add_parser("tail", help=SERVICE_COMMANDS["tail"])
    tail.add_argument("--json", action="store_true", help="print each record as JSON")
    tail.add_argument("--dead", action="store_true", help="follow the dead-letter stream")
    tail.add_argument("--from-start", action="store_true", help="begin at the first entry")
    tail.add_argument("--count", type=int, default=None, help="stop after this many")
    tail.set_defaults(command=run_tail)

    demo_command = subparsers.add_parser("demo", help=SERVICE_COMMANDS["demo"])
    demo_command.set_defaults(command=run_demo)

    asyncapi = subparsers.add_parser("asyncapi", help=SERVICE_COMMANDS["asyncapi"])
    asyncapi.add_argument("--write", type=Path, metavar="FILE")
    asyncapi.set_defaults(command=run_asyncapi)


def run_serve(arguments: argparse.Namespace) -> int:
    _warn_unknown_variables()
    try:
        settings = load_settings()
    except SettingsError as error:
        return _invalid_settings(error)
    _configure_logging(settings)
    from thoughtline.worker.app import Worker, collect_less_often

    embedded: EmbeddedRedis | None = None
    url = settings.redis_url
    if url is None:
        url, embedded = join_or_start(arguments.data_dir)
        if embedded is None:  # another serve in this folder runs it: one more worker on it
            print(
                f"thoughtline: no THOUGHTLINE_REDIS_URL set; joined the embedded Redis at {url} "
                f"that another serve runs in {arguments.data_dir} (it stops when that one does)",
                flush=True,
            )
        else:
            print(
                f"thoughtline: no THOUGHTLINE_REDIS_URL set; started an embedded Redis at {url} "
                f"(data in {arguments.data_dir})",
                flush=True,
            )
    collect_less_often()
    try:
        return asyncio.run(Worker(settings, url).run())
    except MetricsPortError as error:
        print(f"thoughtline: {error}", file=sys.stderr)
        return EXIT_METRICS_PORT
    except redis.AuthenticationError as error:
        print(
            f"thoughtline: cannot use Redis at {_without_password(url)}: authentication failed "
            f"({_one_line(error)}): {_credentials_hint(url)}",
            file=sys.stderr,
        )
        return EXIT_REDIS
    except (redis.RedisError, OSError) as error:
        print(f"thoughtline: cannot use Redis: {type(error).__name__}: {error}", file=sys.stderr)
        return EXIT_REDIS
    finally:
        if embedded is not None:
            embedded.stop()


def run_publish(arguments: argparse.Namespace) -> int:
    if arguments.meta is not None and not _is_json_object(arguments.meta):
        print('thoughtline: --meta must be a JSON object, like \'{"user": "u1"}\'', file=sys.stderr)
        return 1
    connected = _connect()
    if isinstance(connected, int):
        return connected
    settings, client = connected
    return _reaching_redis(settings, lambda: _publish(arguments, settings, client))


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _publish(arguments: argparse.Namespace, settings: Settings, client: Client) -> int:
    client.ping()  # an unreachable Redis is said once, before reading any file
    from thoughtline.client import input_stream, routes

    partitions = routes(client, settings.input_stream)  # each entry to its partition, if several
    status = 0
    published = 0
    queued: list[str] = []
    with client.pipeline(transaction=False) as pipeline:
        for name in arguments.files:
            try:
                fields = _entry_for_file(name, arguments, settings)
            except (NormalizeError, OSError) as error:
                reason = unreadable(error) if isinstance(error, OSError) else _one_line(error)
                print(f"thoughtline: {name}: {reason}", file=sys.stderr)
                status = 1
                continue
            target = input_stream(partitions, settings.input_stream, fields)
            pipeline.xadd(target, fields)  # type: ignore[arg-type]
            queued.append(name)
            if len(queued) >= PIPELINE_ENTRIES:
                published += _flush(pipeline, queued, published, len(arguments.files))
        published += _flush(pipeline, queued, published, len(arguments.files))
    entries = "entry" if published == 1 else "entries"
    print(f"published {published} {entries} to {settings.input_stream}", file=sys.stderr)
    return status


def _flush(
    pipeline: redis.client.Pipeline | ClusterPipeline, queued: list[str], done: int, total: int
) -> int:
    """Send the queued XADDs; name each entry when there are few, else show progress."""
    entry_ids = pipeline.execute()
    if total <= 20:
        for name, entry_id in zip(queued, entry_ids, strict=True):
            print(f"{name} -> {entry_id.decode()}")
    else:
        print(f"  {done + len(entry_ids)}/{total}", file=sys.stderr, flush=True)
    queued.clear()
    return len(entry_ids)


def _entry_for_file(
    name: str, arguments: argparse.Namespace, settings: Settings
) -> dict[str, bytes]:
    from thoughtline.client import entry

    payload = _read(name, settings.max_payload_bytes)
    if arguments.format or arguments.kind == "request":
        entry_format = arguments.format  # the worker detects request formats itself
    else:
        entry_format = _detected_format(payload)
    return entry(
        payload,
        format=entry_format,
        id=arguments.id or ("stdin" if name == "-" else Path(name).name),
        meta=arguments.meta,
        kind=arguments.kind,
        deltas=arguments.deltas,
    )


def _detected_format(payload: bytes) -> str | None:
    """The format of a single response body; a recorded stream is left to the worker."""
    body = payload.strip()
    if looks_like_stream(body):
        return None
    try:
        return detect_format(body)
    except UnknownFormatError as error:  # a format given by hand helps here, and only here
        raise naming_the_flag(error) from None


def _read(name: str, limit: int) -> bytes:
    if name == "-":
        data = sys.stdin.buffer.read(limit + 1)
    else:
        with open(name, "rb") as stream:
            data = stream.read(limit + 1)
    if len(data) > limit:
        raise NormalizeError("too_large", f"over THOUGHTLINE_MAX_PAYLOAD_BYTES={limit}")
    return data


def run_tail(arguments: argparse.Namespace) -> int:
    connected = _connect()
    if isinstance(connected, int):
        return connected
    settings, client = connected
    return _reaching_redis(settings, lambda: _tail(arguments, settings, client))


def _tail(arguments: argparse.Namespace, settings: Settings, client: Client) -> int:
    from thoughtline.client import read_streams, routes, same_slot_groups

    stream = settings.dead_stream if arguments.dead else settings.output_stream
    streams = read_streams(routes(client, stream), stream)  # every partition's, if several
    last_ids = {
        name: "0" if arguments.from_start else _last_entry_id(client, name) for name in streams
    }
    groups = same_slot_groups(client, streams)  # one XREAD may name them all, unless a cluster
    shown = 0
    for turn in itertools.count():
        if arguments.count is not None and shown >= arguments.count:
            break
        response = _read_tail(client, groups, last_ids, turn)
        for name, page in response:
            for entry_id, fields in page:
                last_ids[name.decode()] = entry_id.decode()
                print(console.describe_entry(entry_id, fields, as_json=arguments.json), flush=True)
                shown += 1
                if arguments.count is not None and shown >= arguments.count:
                    return 0
    return 0


def _read_tail(
    client: Client, groups: list[list[str]], last_ids: dict[str, str], turn: int
) -> StreamsResponse:
    """The next entries after `last_ids`: one blocking `XREAD` when one command may name
    every stream; else (a cluster, partitions on several slots) one `XREAD` per slot, and
    when none had anything, a blocking one on one slot's streams in turn, for a share of
    `TAIL_BLOCK_MS`."""
    if len(groups) == 1:
        return _xread(client, groups[0], last_ids, TAIL_BLOCK_MS)
    found: StreamsResponse = []
    for group in groups:
        found.extend(_xread(client, group, last_ids, None))
    if found:
        return found
    waiting = groups[turn % len(groups)]
    return _xread(client, waiting, last_ids, max(1, TAIL_BLOCK_MS // len(groups)))


def _xread(
    client: Client, streams: list[str], last_ids: dict[str, str], block_ms: int | None
) -> StreamsResponse:
    wanted = {name: last_ids[name] for name in streams}
    response = client.xread(wanted, count=100, block=block_ms)  # type: ignore[arg-type]
    return list(cast(StreamsResponse, response) or [])


def _last_entry_id(client: Client, stream: str) -> str:
    """The newest entry now, resolved once: `$` on every read would skip entries in between."""
    newest = cast(list[tuple[bytes, object]], client.xrevrange(stream, count=1))
    for entry_id, _fields in newest:
        return entry_id.decode()
    return "0-0"


def run_demo(arguments: argparse.Namespace) -> int:
    from thoughtline.cli import demo

    _configure_logging(Settings(log_level="WARNING", redis_url=None))
    return asyncio.run(demo.run())


def run_asyncapi(arguments: argparse.Namespace) -> int:
    from thoughtline.worker.asyncapi import asyncapi_document

    document = asyncapi_document()
    if arguments.write is None:
        sys.stdout.buffer.write(document)
    else:
        try:
            arguments.write.parent.mkdir(parents=True, exist_ok=True)
            arguments.write.write_bytes(document)
        except OSError as error:
            reason = _os_error(error)
            print(f"thoughtline: cannot write {arguments.write}: {reason}", file=sys.stderr)
            return 1
        print(f"wrote {arguments.write}")
    return 0


def _os_error(error: OSError) -> str:
    return error.strerror or _one_line(error)
