"""The `thoughtline` command line (docs/normalize.md, docs/service.md).

    thoughtline normalize [--format F] [FILE...]   offline, one record per file
    thoughtline normalize --explain FILE...         what inline extraction took out, and why
    thoughtline inspect [--format F] [FILE...]     the request check offline, one record per file
    thoughtline replay --to F RECORDS.jsonl        the next-turn history from records
    thoughtline schema [--write DIR]               the JSON Schemas (entry, record, ...)
    thoughtline partitions [--json]                where the partitions live, their lag
    thoughtline export otlp                        records as OpenTelemetry spans (docs/otel.md)
    thoughtline serve | publish | tail | demo       the service (see thoughtline.cli.service)
    thoughtline --version                          the installed version

Errors are one line on stderr and exit status 1, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from thoughtline.cli.names import EXPORT_HELP, SERVICE_COMMANDS, naming_the_flag
from thoughtline.contract import schema as schema_module
from thoughtline.contract.errors import NormalizeError, ThoughtlineError
from thoughtline.contract.record import KNOWN_FORMATS, encode
from thoughtline.reading.payload import DEFAULT_MAX_PAYLOAD_BYTES

Command = Callable[[argparse.Namespace], int]


def main(argv: Sequence[str] | None = None) -> int:
    arguments_given = sys.argv[1:] if argv is None else list(argv)
    parser = parser_for(arguments_given)
    arguments = parser.parse_args(arguments_given)
    command: Command = arguments.command
    try:
        return command(arguments)
    except KeyboardInterrupt:
        return 130
    except ThoughtlineError as error:
        print(f"thoughtline: {error}", file=sys.stderr)
        return 1


def parser_for(arguments: Sequence[str]) -> argparse.ArgumentParser:
    """The parser `arguments` need: the service or export commands' whole parsers only when
    they name one."""
    named = _command_named(arguments)
    return build_parser(serving=named in SERVICE_COMMANDS, exporting=named == "export")


def build_parser(*, serving: bool = True, exporting: bool = True) -> argparse.ArgumentParser:
    """The whole command line. `serving` False: the service commands are listed by name only,
    so a command that does not serve never imports the worker, Redis or FastStream (the
    command line starts in a fraction of the time); `exporting` False: the same for `export`,
    whose parser loads Redis and Prometheus (never the worker)."""
    parser = argparse.ArgumentParser(
        prog="thoughtline",
        description="Normalize raw LLM provider responses: content, thinking, usage, replay parts.",
    )
    parser.add_argument("--version", action=_PrintVersion, help="print the version and exit")
    subparsers = parser.add_subparsers(required=True, metavar="COMMAND")
    _add_normalize(subparsers)
    _add_inspect(subparsers)
    _add_schema(subparsers)
    _add_partitions(subparsers)
    if exporting:
        _add_export(subparsers)
    else:
        subparsers.add_parser("export", help=EXPORT_HELP)
    if serving:
        _add_service_commands(subparsers)
    else:
        _list_service_commands(subparsers)
    _add_replay(subparsers)
    return parser


class _PrintVersion(argparse.Action):
    """`--version`, with the version read only when asked for: importlib.metadata would
    otherwise add to the start of every command."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        print(f"thoughtline {_version()}")
        parser.exit()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("thoughtline")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def _add_replay(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`thoughtline replay --to FORMAT RECORDS.jsonl`: the next-turn history as one JSON value."""
    command = subparsers.add_parser(
        "replay", help="print the next-turn history (provider-native turns) built from records"
    )
    command.add_argument(
        "records", metavar="RECORDS.jsonl", help="records as `normalize` prints them; - is stdin"
    )
    command.add_argument("--to", required=True, choices=KNOWN_FORMATS, help="target format")
    command.add_argument(
        "--preserve-reasoning",
        action="store_true",
        help="send a Chat record's reasoning_content (Ollama: thinking) back on every turn, not "
        "only on turns that called tools (GLM preserved thinking, clear_thinking: false)",
    )

    def run_replay(arguments: argparse.Namespace) -> int:
        from thoughtline import api, replay

        try:
            data = _read(arguments.records, DEFAULT_MAX_PAYLOAD_BYTES)
        except OSError as error:
            print(f"thoughtline: {arguments.records}: {_one_line(error)}", file=sys.stderr)
            return 1
        source = "stdin" if arguments.records == "-" else arguments.records
        history = api.build_history(
            replay.read_records(data, source),
            arguments.to,
            preserve_reasoning=arguments.preserve_reasoning,
        )
        sys.stdout.buffer.write(api.encode_history(history) + b"\n")
        return 0

    command.set_defaults(command=run_replay)


def _add_normalize(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = subparsers.add_parser(
        "normalize", help="normalize raw payloads or recorded streams offline"
    )
    command.add_argument("files", nargs="*", metavar="FILE", help="payload files; - is stdin")
    command.add_argument("--format", choices=KNOWN_FORMATS, help="skip format detection")
    command.add_argument(
        "--max-payload-bytes",
        type=int,
        default=DEFAULT_MAX_PAYLOAD_BYTES,
        help="refuse larger payloads (default: 32 MiB)",
    )
    command.add_argument(
        "--kind",
        choices=("response", "request"),
        default="response",
        help="request: the files are provider request bodies, checked for reasoning sent back "
        "as text (the same as `thoughtline inspect`)",
    )
    mode = command.add_mutually_exclusive_group()
    mode.add_argument(
        "--deltas", action="store_true", help="for recorded streams, print one delta per chunk"
    )
    mode.add_argument(
        "--explain",
        action="store_true",
        help="instead of the record, show which spans of the visible text were taken out as "
        "reasoning or markers, by which rule and dialect",
    )
    command.set_defaults(command=run_normalize)


def _add_inspect(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`thoughtline inspect request.json`: what the worker does with a `kind=request` entry."""
    command = subparsers.add_parser(
        "inspect",
        help="check provider request bodies offline for reasoning sent back as text",
        description="Check provider request bodies (what your application is about to send) "
        "for reasoning sent back as ordinary text: one record per file, its detections say "
        "where. A provider's own reasoning field going back to it is protocol and not flagged.",
    )
    command.add_argument("files", nargs="*", metavar="FILE", help="request bodies; - is stdin")
    command.add_argument("--format", choices=KNOWN_FORMATS, help="skip format detection")
    command.add_argument(
        "--max-payload-bytes",
        type=int,
        default=DEFAULT_MAX_PAYLOAD_BYTES,
        help="refuse larger payloads (default: 32 MiB)",
    )
    command.set_defaults(command=run_normalize, kind="request", deltas=False, explain=False)


def _add_schema(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command = subparsers.add_parser("schema", help="print or write the JSON Schemas")
    command.add_argument(
        "--write",
        type=Path,
        metavar="DIR",
        help="write the entry, live-entry, record and delta schema files into DIR",
    )
    command.set_defaults(command=run_schema)


def _add_partitions(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`thoughtline partitions`: an operator's look at the layout (`cli/partitions.py`); it
    needs Redis but not the worker, so it is no service command and starts fast."""
    command = subparsers.add_parser(
        "partitions",
        help="show where the partitions live (slot, master) and how far behind each is",
        description="Show the partitions as the workers wrote them into Redis: the count, per "
        "partition its hash tag, keys and cluster slot, the master that owns the slot (on a "
        "Redis Cluster), and its input's length, pending entries and lag. Warns when the "
        "partitions sit unevenly on the masters and lists the slot moves that spread them "
        "again. See docs/partitions.md.",
    )
    command.add_argument(
        "--redis-url", help="a node of the deployment (default: $THOUGHTLINE_REDIS_URL)"
    )
    command.add_argument(
        "--stream",
        help="the configured input stream (default: $THOUGHTLINE_INPUT_STREAM, else "
        "{thoughtline}:raw)",
    )
    command.add_argument(
        "--group",
        help="the workers' consumer group (default: $THOUGHTLINE_GROUP, else thoughtline)",
    )
    command.add_argument("--json", action="store_true", help="one JSON document, for scripts")

    def run_partitions(arguments: argparse.Namespace) -> int:
        from thoughtline.cli import partitions

        return partitions.run(arguments)

    command.set_defaults(command=run_partitions)


def _add_export(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`thoughtline export otlp` (`cli/export.py`): it needs Redis and OpenTelemetry but not
    the worker, so it is no service command and starts fast."""
    from thoughtline.cli import export

    export.add_export(subparsers)


def _add_service_commands(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    from thoughtline.cli import service  # imported when the parser is built: it loads the worker

    service.add_commands(subparsers)


def _list_service_commands(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    """The service commands' names and one-line help, for `thoughtline --help`."""
    for name, help_line in SERVICE_COMMANDS.items():
        subparsers.add_parser(name, help=help_line)


def _command_named(arguments: Sequence[str]) -> str | None:
    """The first argument that is not an option; top-level options are only `--version` and
    `--help`, which take no value."""
    return next((argument for argument in arguments if not argument.startswith("-")), None)


def run_normalize(arguments: argparse.Namespace) -> int:
    """Print one JSON record (or delta lines) per file; one-line errors, status 1 on any."""
    files: list[str] = arguments.files or ["-"]
    status = 0
    for name in files:
        payload = b""
        try:
            payload = _read(name, arguments.max_payload_bytes)
            sys.stdout.buffer.write(_normalize_one(payload, name, arguments))
            sys.stdout.buffer.flush()
        except NormalizeError as error:
            hint = _request_hint(payload) if arguments.kind == "response" else ""
            print(
                f"thoughtline: {name}: {_one_line(naming_the_flag(error))}{hint}", file=sys.stderr
            )
            status = 1
        except OSError as error:
            print(f"thoughtline: {name}: {_one_line(error)}", file=sys.stderr)
            status = 1
    return status


def _request_hint(payload: bytes) -> str:
    """When a payload that is no response reads as a provider request body, say so."""
    from thoughtline.providers.detection import detect_request_format

    try:
        body = msgspec.json.decode(payload)
        if not isinstance(body, dict) or "choices" in body or "candidates" in body:
            return ""
        found = detect_request_format(body)
    except (msgspec.DecodeError, RecursionError, ThoughtlineError):
        return ""
    return f" (this looks like a request body, format {found}: check it with `thoughtline inspect`)"


def _normalize_one(payload: bytes, name: str, arguments: argparse.Namespace) -> bytes:
    if arguments.kind == "request":
        from thoughtline.api import normalize_request

        request = normalize_request(
            payload, arguments.format, max_payload_bytes=arguments.max_payload_bytes
        )
        request.id = request.id or _file_id(name)
        return encode(request) + b"\n"
    if arguments.explain:
        from thoughtline import explain

        explanation = explain.explain(
            payload, arguments.format, max_payload_bytes=arguments.max_payload_bytes
        )
        return explain.report(name, explanation).encode()
    if arguments.deltas:
        from thoughtline.api import deltas as deltas_of

        deltas = deltas_of(payload, arguments.format)
        for delta in deltas:  # the record's id rule: the response id, else the file name
            delta.id = delta.id or _file_id(name)
        return b"".join(msgspec.json.encode(delta) + b"\n" for delta in deltas)
    from thoughtline.api import normalize  # at first use: `--version` needs no reader

    record = normalize(payload, arguments.format, max_payload_bytes=arguments.max_payload_bytes)
    if not record.id:
        record.id = _file_id(name)
    return encode(record) + b"\n"


def _read(name: str, limit: int) -> bytes:
    """Read at most `limit` + 1 bytes, so an oversize file is refused without reading it all."""
    stream: BinaryIO
    if name == "-":
        return _read_limited(sys.stdin.buffer, limit)
    with open(name, "rb") as stream:
        return _read_limited(stream, limit)


def _read_limited(stream: BinaryIO, limit: int) -> bytes:
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise NormalizeError("too_large", f"payload is over the cap of {limit} bytes")
    return data


def _file_id(name: str) -> str:
    return "stdin" if name == "-" else Path(name).name


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


def run_schema(arguments: argparse.Namespace) -> int:
    schemas = schema_module.all_schemas()
    if arguments.write is None:
        sys.stdout.buffer.write(msgspec.json.format(msgspec.json.encode(schemas)) + b"\n")
        return 0
    for file_name, document in schema_module.files().items():
        target = arguments.write / file_name
        try:
            arguments.write.mkdir(parents=True, exist_ok=True)
            target.write_bytes(document)
        except OSError as error:
            print(f"thoughtline: cannot write {target}: {_os_error(error)}", file=sys.stderr)
            return 1
        print(f"wrote {target}")
    return 0


def _os_error(error: OSError) -> str:
    return error.strerror or _one_line(error)


if __name__ == "__main__":
    raise SystemExit(main())
