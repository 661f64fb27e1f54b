"""A real Redis Cluster on loopback for tests: masters, optional replicas, and what a test
needs to look at it (who owns a slot, each master's command counts) or break it (a failover,
a killed master)."""

from __future__ import annotations

import random
import socket
import subprocess
import time
from pathlib import Path

import redis

from tests.chaos.servers import RedisServer, redis_cli_binary

CLUSTER_BUS_OFFSET = 10_000
STREAM_COMMAND_PREFIX = "cmdstat_x"
"""`INFO commandstats` sections of stream commands (XADD, XREADGROUP, XACK, XAUTOCLAIM, ...),
counted also when a script runs them."""


class LocalCluster:
    def __init__(
        self,
        root: Path,
        masters: int,
        replicas_per_master: int = 0,
        node_timeout_ms: int | None = 2000,
    ) -> None:
        """`node_timeout_ms`: how soon a silent node counts as failed (short, for failovers);
        None keeps Redis's own (15 s: a loaded machine never fails a cluster that is fine)."""
        self.masters = masters
        self.replicas_per_master = replicas_per_master
        timeout = (
            () if node_timeout_ms is None else ("--cluster-node-timeout", str(node_timeout_ms))
        )
        self.nodes = [
            RedisServer(root / f"node-{number}", "--cluster-enabled", "yes",
                        "--cluster-config-file", "nodes.conf", "--appendonly", "no",
                        *timeout, port=_port_with_free_bus_port())
            for number in range(masters * (1 + replicas_per_master))
        ]  # fmt: skip

    def start(self) -> LocalCluster:
        cli = redis_cli_binary()
        assert cli is not None
        for node in self.nodes:
            node.start()
        addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
        subprocess.run(
            [cli, "--cluster", "create", *addresses,
             "--cluster-replicas", str(self.replicas_per_master), "--cluster-yes"],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        for node in self.nodes:
            wait_for_cluster_ok(node.port)
        self.wait_for_replicas()
        return self

    def kill(self) -> None:
        for node in self.nodes:
            node.kill()

    @property
    def ports(self) -> list[int]:
        return [node.port for node in self.nodes]

    def url(self) -> str:
        return f"redis://127.0.0.1:{self.live_ports()[0]}/0"

    def live_ports(self) -> list[int]:
        return [node.port for node in self.nodes if node.pid is not None]

    def master_ports(self) -> list[int]:
        """The ports of the nodes that are masters now (owning slots)."""
        found = []
        for port in self.live_ports():
            role = _node(port).execute_command("ROLE")[0]
            if role in (b"master", "master"):
                found.append(port)
        return sorted(found)

    def owner_of(self, slot: int) -> int:
        for start, end, master, *_ in _node(self.live_ports()[0]).execute_command("CLUSTER SLOTS"):
            if start <= slot <= end:
                return int(master[1])
        raise AssertionError(f"no node owns slot {slot}")

    def replica_of(self, master_port: int, timeout: float = 30.0) -> int:
        """A replica of the master on `master_port`. A replica whose link is up can still be
        missing from the master's `CLUSTER SLOTS` until gossip has told it: asked again."""
        deadline = time.monotonic() + timeout
        while True:
            for _start, _end, master, *replicas in _node(master_port).execute_command(
                "CLUSTER SLOTS"
            ):
                if int(master[1]) == master_port and replicas:
                    return int(replicas[0][1])
            assert time.monotonic() < deadline, f"{master_port} has no replica"
            time.sleep(0.1)

    def server(self, port: int) -> RedisServer:
        return next(node for node in self.nodes if node.port == port)

    def reset_stats(self) -> None:
        for port in self.live_ports():
            _node(port).config_resetstat()

    def stream_commands(self) -> dict[int, int]:
        """Per master: calls of stream commands since `reset_stats`."""
        counts = {}
        for port in self.master_ports():
            stats = _node(port).info("commandstats")
            counts[port] = sum(
                int(value["calls"]) for name, value in stats.items()
                if name.startswith(STREAM_COMMAND_PREFIX)
            )  # fmt: skip
        return counts

    def calls_of(self, command: str) -> int:
        """Calls of one command (`command|getkeys`, say) summed over every node."""
        total = 0
        for port in self.live_ports():
            stats = _node(port).info("commandstats")
            total += int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))
        return total

    def cpu_seconds(self) -> dict[int, float]:
        """Per master: `used_cpu_sys` + `used_cpu_user` so far."""
        found = {}
        for port in self.master_ports():
            cpu = _node(port).info("cpu")
            found[port] = float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"])
        return found

    def wait_for_replicas(self, timeout: float = 30.0) -> None:
        if not self.replicas_per_master:
            return
        deadline = time.monotonic() + timeout
        while True:
            linked = 0
            for port in self.live_ports():
                info = _node(port).info("replication")
                if info["role"] == "slave" and info.get("master_link_status") == "up":
                    linked += 1
            if linked >= self.masters * self.replicas_per_master:
                return
            assert time.monotonic() < deadline, "replicas did not link up"
            time.sleep(0.1)


def _node(port: int) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=5)


def wait_for_cluster_ok(port: int, timeout: float = 30.0) -> None:
    node = _node(port)
    deadline = time.monotonic() + timeout
    while node.cluster("info")["cluster_state"] != "ok":
        assert time.monotonic() < deadline, f"node {port}: cluster_state never became ok"
        time.sleep(0.1)
    node.close()


def _port_with_free_bus_port() -> int:
    """A free port whose cluster bus port (port + 10000, so at most 55535) is free as well."""
    for _ in range(200):
        port = random.randint(20_000, 45_000)
        if _bindable(port) and _bindable(port + CLUSTER_BUS_OFFSET):
            return port
    raise AssertionError("no free port pair for a cluster node")


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
