"""No body reader takes a recorded stream.

`normalize(payload, format)` hands the payload to the format's body reader first and looks at
its framing only when the reader refuses it, so a reader that accepted SSE, a JSON array or
JSON lines would read a stream as one body. Every golden body of every format, framed each way,
must be refused by every reader.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from thoughtline.contract.errors import NormalizeError
from thoughtline.providers.registry import FORMATS_BY_NAME

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
BODIES = sorted(GOLDEN.glob("*/*.raw.json"))


def _compact(path: Path) -> bytes:
    return msgspec.json.encode(msgspec.json.decode(path.read_bytes()))


def _framings(body: bytes) -> dict[str, bytes]:
    return {
        "sse": b"data: " + body + b"\n\ndata: " + body + b"\n\n",
        "json array": b"[" + body + b"," + body + b"]",
        "json lines": body + b"\n" + body + b"\n",
    }


@pytest.mark.parametrize("path", BODIES, ids=[f"{p.parent.name}/{p.name}" for p in BODIES])
def test_every_reader_refuses_every_framing_of_a_golden_body(path: Path) -> None:
    body = _compact(path)
    for framing, payload in _framings(body).items():
        for name, format_row in FORMATS_BY_NAME.items():
            with pytest.raises(NormalizeError):
                format_row.body.normalize(payload)
                pytest.fail(f"the {name} body reader took a {framing} payload")
