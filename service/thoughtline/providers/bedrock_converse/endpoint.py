"""Bedrock Converse as capture sees it. Its calls are not told by their URL: boto3 sends them
with botocore, not httpx, and `capture.bedrock`'s hooks on the client name the format. What
the URL says is the model (`/model/<model id>/converse` or `…/converse-stream`), and
`ConverseStream` answers in AWS's binary event stream."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.endpoint import Endpoint

ENDPOINT: Final = Endpoint(
    format="bedrock_converse",
    paths=(),
    model_in_path=r"/model/(.+)/converse(?:-stream)?$",
    binary_stream_type="application/vnd.amazon.eventstream",
)
