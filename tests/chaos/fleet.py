"""A fleet of `thoughtline serve` processes to abuse: SIGKILL one, revive the dead, check health
(and, `HealthMonitor`, how long a live worker ever went without answering `/healthz`).

Used by bench/chaos.py, bench/hostile.py and the CI chaos test. Each worker process has its own
log file and metrics port, and is known to Redis as the consumer `<host>-<pid>`.
"""

from __future__ import annotations

import random
import re
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import redis

from tests.service.support import serve, wait_exit
from thoughtline.worker.embedded import free_port
from thoughtline.worker.settings import Settings

HEALTH_TIMEOUT_SECONDS: Final = 20.0
PROBE_TIMEOUT_SECONDS: Final = 15.0
RECLAIMED_LINE: Final = re.compile(rb"reclaimed (\d+) entries")


@dataclass
class WorkerProcess:
    slot: int
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def consumer(self) -> str:
        return f"{socket.gethostname()}-{self.process.pid}"


class Fleet:
    """`size` worker slots; a slot whose process dies gets a new process (a supervisor's job)."""

    def __init__(
        self,
        settings: Settings,
        directory: Path,
        size: int,
        *,
        code: str | None = None,
        environment: dict[str, str] | None = None,
    ) -> None:
        self.settings = settings
        self.environment = environment or {}
        """More `THOUGHTLINE_*` variables for every worker (settings `serve` does not pass)."""
        self.directory = directory
        self.size = size
        self.code = code
        self.workers: list[WorkerProcess] = []
        self.self_exits: list[int] = []
        """Exit statuses of workers that ended without being killed."""
        self.logs: list[Path] = []

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.workers = [self._spawn(slot) for slot in range(self.size)]

    def kill_one(self, random_source: random.Random) -> int:
        """SIGKILL a random worker and start another in its slot; returns the killed pid."""
        index = random_source.randrange(len(self.workers))
        victim = self.workers[index]
        victim.process.kill()
        victim.process.wait()
        self.workers[index] = self._spawn(victim.slot)
        return victim.process.pid

    def revive_exited(self) -> None:
        for index, worker in enumerate(self.workers):
            if worker.process.poll() is not None:
                self.self_exits.append(worker.process.returncode)
                self.workers[index] = self._spawn(worker.slot)

    def health_problems(self) -> list[str]:
        """Per live worker: /healthz and /readyz answer 200 (it may still be starting)."""
        problems = []
        deadline = time.monotonic() + HEALTH_TIMEOUT_SECONDS
        for worker in self.workers:
            while (problem := _health_problem(worker)) is not None:
                if time.monotonic() > deadline:
                    problems.append(f"worker {worker.consumer}: {problem}")
                    break
                time.sleep(0.2)
        return problems

    def probe_each(self, client: redis.Redis, payload: bytes, count: int = 3) -> list[str]:
        """Each live worker alone (the others SIGSTOPped) must turn `count` new entries into
        records: a worker that answers /healthz but no longer reads would fail here."""
        problems = []
        settle = 2 * self.settings.block_ms / 1000 + 0.2  # the others' blocked reads expire
        for worker in self.workers:
            others = [other.process for other in self.workers if other is not worker]
            for process in others:
                process.send_signal(signal.SIGSTOP)
            try:
                time.sleep(settle)
                ids = [f"probe-{worker.process.pid}-{number}" for number in range(count)]
                before = client.xlen(self.settings.output_stream)
                for probe_id in ids:
                    client.xadd(self.settings.input_stream, {"payload": payload, "id": probe_id})
                deadline = time.monotonic() + PROBE_TIMEOUT_SECONDS
                while client.xlen(self.settings.output_stream) < before + count:
                    if time.monotonic() > deadline:
                        problems.append(f"worker {worker.consumer} did not process its probes")
                        break
                    time.sleep(0.05)
            finally:
                for process in others:
                    process.send_signal(signal.SIGCONT)
        return problems

    def reclaimed_total(self) -> int:
        """Entries the workers reclaimed from dead consumers, read off their logs."""
        return sum(int(count) for log in self.logs for count in RECLAIMED_LINE.findall(
            log.read_bytes()))  # fmt: skip

    def stop_all(self) -> list[int]:
        """SIGTERM every worker; their exit statuses (0 is a clean drain)."""
        for worker in self.workers:
            worker.process.send_signal(signal.SIGTERM)
        codes = [wait_exit(worker.process) for worker in self.workers]
        self.workers = []
        return codes

    def kill_all(self) -> None:
        for worker in self.workers:
            if worker.process.poll() is None:
                worker.process.kill()
                worker.process.wait()
        self.workers = []

    def _spawn(self, slot: int) -> WorkerProcess:
        port = free_port()
        log = self.directory / f"worker-{slot}-{len(self.logs)}.log"
        self.logs.append(log)
        process = serve(
            self.settings,
            log,
            code=self.code,
            THOUGHTLINE_METRICS_PORT=str(port),
            THOUGHTLINE_MAX_PAYLOAD_BYTES=str(self.settings.max_payload_bytes),
            THOUGHTLINE_REDIS_CLUSTER=str(self.settings.redis_cluster).lower(),
            **self.environment,
        )
        return WorkerProcess(slot, process, port, log)


class HealthMonitor(threading.Thread):
    """Polls every live worker's /healthz; `longest_gap` is the longest time one worker
    process (while it lived) went without answering."""

    def __init__(self, fleet: Fleet) -> None:
        super().__init__(name="health-monitor", daemon=True)
        self.fleet = fleet
        self.longest_gap = 0.0
        self._stopped = threading.Event()

    def run(self) -> None:
        answered: dict[int, float] = {}
        while not self._stopped.is_set():
            for worker in list(self.fleet.workers):
                pid = worker.process.pid
                try:
                    url = f"http://127.0.0.1:{worker.port}/healthz"
                    with urllib.request.urlopen(url, timeout=5):
                        pass
                except (urllib.error.URLError, OSError):
                    continue  # starting, killed or stopped: not a silence of a live worker
                now = time.monotonic()
                if pid in answered:
                    self.longest_gap = max(self.longest_gap, now - answered[pid])
                answered[pid] = now
            self._stopped.wait(0.1)

    def stop(self) -> None:
        self._stopped.set()
        if self.is_alive():
            self.join(timeout=10)


def _health_problem(worker: WorkerProcess) -> str | None:
    if worker.process.poll() is not None:
        return f"exited with {worker.process.returncode}"
    for path in ("/healthz", "/readyz"):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{worker.port}{path}", timeout=2):
                pass
        except (urllib.error.URLError, OSError) as error:
            return f"{path}: {error}"
    return None
