"""The worker: the FastStream service around the pure core (it does the I/O).

app          the FastStream app and `Worker`: consume, normalize, commit, reclaim, drain
batches      one batch: entries -> outcomes, in a worker thread, then one commit
entries      one entry -> its outcome (record, deltas, request inspection, dead letter)
commit       the atomic commit script (outputs added and the entry acknowledged in one go)
group        the consumer group: created at the right id (again when it vanished), its state,
             dead consumers removed
reclaim      claiming idle entries of dead consumers, and the loop that does it
retry        what a Redis error means (transient, refused write) and the one backoff every
             retry loop waits with (the export's and the capture publisher's too)
conversations the per-conversation fingerprints and reasoning-only streaks in Redis
connections  Redis clients and brokers (no CLIENT SETINFO), raw stream replies parsed
metrics      every Prometheus metric
health       the health server: /metrics, /livez, /readyz and the readiness problems
settings     every setting (pydantic-settings, prefix THOUGHTLINE_)
embedded     the embedded Redis for `serve` and `demo` without a Redis URL
asyncapi     the AsyncAPI document of the four streams
"""
