"""The `thoughtline` command line: `main` (normalize, schema, replay) and the service commands
(`service`: serve, publish, tail, demo, asyncapi), with `console` for readable lines and
`demo` for the bundled samples."""

from thoughtline.cli.commands import main

__all__ = ["main"]
