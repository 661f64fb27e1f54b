"""The body readers: one module per provider format, pure functions from a response body's
bytes to a `Record` (no I/O); `thoughtline.registry` names each format's reader. The shared
pieces are `compose` (decoding, the turn, the record), `function_calls` and `wire_values`;
inline reasoning in visible text is `thoughtline.reasoning`.
"""
