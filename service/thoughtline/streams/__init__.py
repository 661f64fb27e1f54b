"""Pure: recorded streams (SSE, JSON lines or a JSON array of chunks) -> one record, plus deltas.

A stream's record is the record of the same turn's non-streamed body, by construction:

    payload --frame--> chunks --assemble--> the provider's non-streamed body
            --the format's body reader--> record --stream facts--> record

`framing` splits the recording into chunks, the format's assembler (in its provider folder,
named by its row) rebuilds the body the non-streamed call would have returned (opaque
values copied byte for byte), and the format's body reader reads it. Only
what a body cannot say is added here: a stream cut before its terminal event
(`truncated_stream`: usage and finish reason null), an error event (`stream_error`: finish
reason `error`), chunks that are not JSON (`invalid_chunk`) and events out of order
(`stream_out_of_order`).

Deltas: one per chunk, from the text each chunk added; inline reasoning is extracted over the
whole text and each piece given to the chunk it came in (a recording is complete), so at
`is_final` the accumulations equal the record's content and thinking.

The modules: `framing` (bytes -> chunks), `base` (the assembly every assembler returns),
`reading` (chunks -> record and deltas) and `live` (entries fed chunk by chunk). The package itself
imports nothing, so format detection can use `framing` without a cycle.
"""
