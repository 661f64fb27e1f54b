"""What one Redis shard spends per response and per live chunk (docs/scaling.md).

    PYTHONPATH=service python bench/shard.py [--responses 20000] [--streams 200] [--chunks 50]

A private redis-server and one worker in this process. Responses: `--responses` copies of a
2 KB Anthropic response are published (pipelined `XADD`s) and normalized; live: `--streams`
streams of `--chunks` Chat chunks each. For each run it reads the server's own accounting,
which does not depend on how fast this machine's Python side is:

- `used_cpu_user` + `used_cpu_sys` of the redis-server process, per response (per chunk):
  a Redis shard runs commands on one core, so 1 / that is what one master carries when Redis,
  not the workers, is the limit;
- `INFO commandstats`: calls per response of every command, and the microseconds per call.

Workers scale out; Redis's main thread does not: this is the bound partitions lift.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `tests.*` helpers, run as a script

import thoughtline.client as tl
from tests.chaos.servers import RedisServer
from thoughtline.cli.demo import sample_files
from thoughtline.worker.app import Worker
from thoughtline.worker.settings import Settings

RESPONSE = next(s for s in sample_files() if s.name == "anthropic.thinking-block.json").read_bytes()
PADDING = 2048


def _response_of_2kb() -> bytes:
    body = json.loads(RESPONSE)
    text = body["content"][-1]["text"]
    body["content"][-1]["text"] = (text + " ") * max(1, PADDING // max(1, len(text)))
    return json.dumps(body).encode()


def _chunk(name: str, seq: int, last: bool) -> bytes:
    delta: dict[str, Any] = {} if last else {"content": f"word{seq} "}
    choice = {"index": 0, "delta": delta, "finish_reason": "stop" if last else None}
    return json.dumps({"id": name, "object": "chat.completion.chunk", "choices": [choice]}).encode()


def _snapshot(client: redis.Redis) -> tuple[float, dict[str, dict[str, float]]]:
    cpu = client.info("cpu")
    stats = client.info("commandstats")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]), stats


async def _run_worker_until(settings: Settings, done: Any) -> None:
    assert settings.redis_url is not None
    worker = Worker(settings, settings.redis_url)
    task = asyncio.create_task(worker.run())
    while not done():
        assert not task.done(), "the worker stopped"
        await asyncio.sleep(0.05)
    worker.stop()
    await task


def measure(client: redis.Redis, settings: Settings, what: str, units: int, publish: Any) -> None:
    client.flushall()
    client.config_resetstat()
    before, _ = _snapshot(client)
    started = time.perf_counter()
    publish()
    output = settings.output_stream if what == "responses" else settings.deltas_stream
    asyncio.run(_run_worker_until(settings, lambda: client.xlen(output) >= units))
    seconds = time.perf_counter() - started
    after, stats = _snapshot(client)
    cpu_us = (after - before) * 1e6 / units
    print(f"{what}: {units} in {seconds:.1f} s here; Redis CPU {cpu_us:.1f} us per unit "
          f"-> one master core carries about {1e6 / cpu_us:,.0f} per second")  # fmt: skip
    for name, value in sorted(stats.items(), key=lambda item: -float(item[1]["usec"])):
        calls = float(value["calls"])
        if calls / units < 0.001:
            continue
        print(f"  {name.removeprefix('cmdstat_'):<22} {calls / units:6.2f} calls/unit "
              f"{float(value['usec_per_call']):8.2f} us/call")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--responses", type=int, default=20_000)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--chunks", type=int, default=50)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        server = RedisServer(Path(directory) / "redis").start()
        try:
            client = redis.Redis.from_url(server.url)
            settings = Settings(redis_url=server.url, metrics_port=0, block_ms=50)
            payload = _response_of_2kb()

            def publish_responses() -> None:
                with client.pipeline(transaction=False) as pipeline:
                    for number in range(arguments.responses):
                        pipeline.xadd(settings.input_stream, {"payload": payload,
                                                              "id": f"r{number}"})  # fmt: skip
                        if number % 1000 == 999:
                            pipeline.execute()
                    pipeline.execute()

            def publish_live() -> None:
                with client.pipeline(transaction=False) as pipeline:
                    for seq in range(arguments.chunks):
                        last = seq == arguments.chunks - 1
                        for number in range(arguments.streams):
                            name = f"s{number}"
                            fields = tl.live_entry(name, seq, _chunk(name, seq, last),
                                                   format="openai_chat", final=last)  # fmt: skip
                            pipeline.xadd(settings.input_stream, fields)  # type: ignore[arg-type]
                    pipeline.execute()

            print(f"payload {len(payload)} bytes")
            measure(client, settings, "responses", arguments.responses, publish_responses)
            chunks = arguments.streams * arguments.chunks
            measure(client, settings, "live chunks", chunks, publish_live)
            client.close()
        finally:
            server.kill()


if __name__ == "__main__":
    main()
