"""The worker: the FastStream service around the pure core (it does the I/O).

app          the FastStream app and `Worker`: consume, normalize, commit, reclaim, drain
batches      one batch: entries -> outcomes, in a worker thread, then one commit
entries      one entry -> its outcome (record, deltas, request inspection, dead letter)
delivery     the atomic commit script, the consumer-group admin and the claim of idle entries
reclaim      the loop that takes over entries of dead consumers
consumers    the loop that removes dead consumers from the group
conversations the per-conversation fingerprints and reasoning-only streaks in Redis
connections  Redis clients and brokers (no CLIENT SETINFO), raw stream replies parsed
metrics      every Prometheus metric, the health server and readiness
settings     every setting (pydantic-settings, prefix THOUGHTLINE_)
embedded     the embedded Redis for `serve` and `demo` without a Redis URL
asyncapi     the AsyncAPI document of the four streams
"""
