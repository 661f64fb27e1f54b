"""The lenient decoding kit every reader stands on: the payload checks (`payload`), decoding
with clear errors and the `Turn` a reader fills (`compose`), lenient nested members
(`wire_values`), function and tool calls (`function_calls`), and the turn -> record step
(`turn`, which runs the inline extractor)."""
