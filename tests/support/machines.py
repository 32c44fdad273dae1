"""Several machines on one: a network namespace each, joined by virtual links to a bridge.

Each machine has its own network stack (its own loopback, one interface
``eth0`` with its own address); the only way between them is its link to the
bridge, whose far end stays in this namespace, so a test can cut it
(``ip link set … down``) or slow it (``tc qdisc … netem delay``) while the
processes on both sides run on. This namespace has an address on the bridge
too, so the test reaches every machine as a client on the network would.

A standalone PostgreSQL server (the embedded wheel's programs: ``initdb``,
``pg_ctl``), not the embedded one, runs on a machine of its own and listens
on TCP, as a database service does. Needs root, ``ip`` and ``tc``.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from paperclip.db import pg_install
from paperclip.db.access import running_as_root, server_user

PG_PORT = 5432


def available() -> str | None:
    """Why machines cannot be made here, or None when they can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "tc", "setpriv"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    if probe.returncode != 0:
        return f"no network namespace may be made: {probe.stderr.decode().strip()}"
    return None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {result.stderr.strip()}")
    return result


@dataclass
class Machine:
    name: str
    namespace: str
    address: str
    link: str
    """The link's end on the bridge, in the test's namespace: what a cut or a delay acts on."""

    def argv(self, argv: list[str]) -> list[str]:
        """``argv`` run on this machine (in its namespace)."""
        return ["ip", "netns", "exec", self.namespace, *argv]


class Network:
    """A bridge and the machines on it; ``close()`` takes it all down."""

    def __init__(self) -> None:
        self.tag = f"{random.randrange(16**4):04x}"
        self.subnet = self._free_subnet()
        self.bridge = f"pc{self.tag}br"
        self.machines: dict[str, Machine] = {}
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.subnet}.1/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")

    @staticmethod
    def _free_subnet() -> str:
        used = _ip("-4", "addr").stdout
        for _ in range(100):
            subnet = f"10.{random.randrange(100, 250)}.{random.randrange(1, 250)}"
            if f"inet {subnet}." not in used:
                return subnet
        raise RuntimeError("no free 10.x.y.0/24 for the machines")

    def add(self, name: str) -> Machine:
        """A machine: its namespace, its link to the bridge, its address."""
        index = len(self.machines) + 2
        machine = Machine(
            name, f"pc{self.tag}-{name}", f"{self.subnet}.{index}", f"pc{self.tag}v{index}"
        )
        inside = f"pc{self.tag}i{index}"
        _ip("netns", "add", machine.namespace)
        _ip("link", "add", machine.link, "type", "veth", "peer", "name", inside)
        _ip("link", "set", inside, "netns", machine.namespace)
        _ip("link", "set", machine.link, "master", self.bridge)
        _ip("link", "set", machine.link, "up")
        ns = ["netns", "exec", machine.namespace, "ip"]
        _ip(*ns, "link", "set", "lo", "up")
        _ip(*ns, "link", "set", inside, "name", "eth0")
        _ip(*ns, "addr", "add", f"{machine.address}/24", "dev", "eth0")
        _ip(*ns, "link", "set", "eth0", "up")
        self.machines[name] = machine
        return machine

    def cut(self, machine: Machine) -> None:
        """Nothing passes the machine's link (its processes run on, alone)."""
        _ip("link", "set", machine.link, "down")

    def heal(self, machine: Machine) -> None:
        """The link carries again, without delay."""
        _ip("link", "set", machine.link, "up")
        subprocess.run(["tc", "qdisc", "del", "dev", machine.link, "root"], capture_output=True)

    def delay(self, machine: Machine, milliseconds: int) -> str:
        """Every packet towards the machine waits ``milliseconds`` on its link (``netem``);
        where the kernel has no ``netem``, the link is made slow instead (``tbf``: a narrow
        rate, its queue up to ``milliseconds`` long). Which one, it returns."""
        tc = ["tc", "qdisc", "replace", "dev", machine.link, "root"]
        delayed = subprocess.run([*tc, "netem", "delay", f"{milliseconds}ms"], capture_output=True)
        if delayed.returncode == 0:
            return "netem"
        slow = ["tbf", "rate", "256kbit", "burst", "4kb", "latency", f"{milliseconds}ms"]
        subprocess.run([*tc, *slow], check=True, capture_output=True)
        return "tbf"

    def close(self) -> None:
        for machine in self.machines.values():
            _kill_namespace(machine.namespace)
            _ip("netns", "del", machine.namespace, check=False)
            _ip("link", "del", machine.link, check=False)
        _ip("link", "del", self.bridge, check=False)


def _kill_namespace(namespace: str) -> None:
    pids = _ip("netns", "pids", namespace, check=False).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), 9)


class StandalonePostgres:
    """A PostgreSQL server of its own on ``machine``, on TCP, any client of the network trusted."""

    def __init__(self, machine: Machine, folder: Path) -> None:
        self.machine, self.folder = machine, folder
        self.data = folder / "pgdata"
        version = pg_install.newest_version()
        self.bin = pg_install.install_for(version, as_root=running_as_root()) / "bin"
        self.user = server_user()

    @property
    def url(self) -> str:
        return f"postgresql://postgres@{self.machine.address}:{PG_PORT}/paperclip"

    def _as_server(self) -> list[str]:
        if not self.user.switch:
            return []
        return ["setpriv", f"--reuid={self.user.uid}", f"--regid={self.user.gid}", "--clear-groups"]

    def start(self, timeout: float = 60) -> str:
        if not self.data.exists():
            self.data.mkdir(parents=True, mode=0o700)
            if self.user.switch:
                os.chown(self.data, self.user.uid, self.user.gid)
            subprocess.run(
                [
                    str(self.bin / "initdb"),
                    "-D",
                    str(self.data),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "--encoding=UTF8",
                    "--locale=C",
                ],
                check=True,
                capture_output=True,
                cwd="/",
                **self.user.subprocess_kwargs(),
            )
            with (self.data / "pg_hba.conf").open("a") as hba:
                hba.write("host all all 0.0.0.0/0 trust\n")
        options = f"-c listen_addresses={self.machine.address} -p {PG_PORT} -k {self.data}"
        subprocess.run(
            self.machine.argv(
                [
                    *self._as_server(),
                    str(self.bin / "pg_ctl"),
                    "-D",
                    str(self.data),
                    "-l",
                    str(self.data / "log"),
                    "-w",
                    "-t",
                    str(int(timeout)),
                    "-o",
                    options,
                    "start",
                ]
            ),
            check=True,
            capture_output=True,
            cwd="/",
            env=self.user.subprocess_kwargs().get("env"),
        )
        exists = self.psql("SELECT 1 FROM pg_database WHERE datname = 'paperclip'")
        if exists.strip() != "1":
            self.psql("CREATE DATABASE paperclip")
        return self.url

    def psql(self, sql: str) -> str:
        """From this namespace, over the network, as any client."""
        return subprocess.run(
            [
                str(self.bin / "psql"),
                "-h",
                self.machine.address,
                "-p",
                str(PG_PORT),
                "-U",
                "postgres",
                "-d",
                "postgres",
                "-XqtA",
                "-c",
                sql,
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout

    def stop(self) -> None:
        subprocess.run(
            self.machine.argv(
                [
                    *self._as_server(),
                    str(self.bin / "pg_ctl"),
                    "-D",
                    str(self.data),
                    "-m",
                    "immediate",
                    "stop",
                ]
            ),
            capture_output=True,
            cwd="/",
            env=self.user.subprocess_kwargs().get("env"),
        )


class Cluster:
    """Control-plane replicas and runners, each on a machine of its own, and the database on
    another: processes started as an operator starts them (``paperclip.chaos.cluster``)."""

    def __init__(self, folder: Path, replicas: int, runners: int, env: dict[str, str]) -> None:
        from paperclip.chaos import cluster as procs

        self.folder, self.procs = folder, procs
        self.network = Network()
        self.postgres = StandalonePostgres(self.network.add("pg"), folder)
        self.replicas = [self.network.add(f"cp{i}") for i in range(replicas)]
        self.runner_machines = [self.network.add(f"runner{i}") for i in range(runners)]
        self.env = env
        self.control_planes: list = []
        self.runners: list = []
        self.key = ""

    @property
    def script_dir(self) -> Path:
        return self.folder / "scripts"

    @property
    def fake_log(self) -> Path:
        return self.folder / "fake.log"

    def url(self, index: int) -> str:
        return f"http://{self.replicas[index].address}:3100"

    def start(self, runners_dial: list[int] | None = None) -> None:
        """The database (migrated), an instance-admin key, the replicas, then the runners,
        each dialling the replicas ``runners_dial`` names (every one by default)."""
        import json

        from paperclip.db import migrate

        url = self.postgres.start()
        migrate.upgrade(url)
        made = subprocess.run(
            [*self.procs.PAPERCLIP, "keys", "create", f"ops-{self.network.tag}", "--json"],
            env={**os.environ, "PAPERCLIP_DATABASE_URL": url},
            capture_output=True,
            text=True,
            check=True,
        )
        self.key = json.loads(made.stdout)["key"]
        for index, machine in enumerate(self.replicas):
            child = self.procs.control_plane(index, 3100, url, self.folder, self.env)
            child.env |= {
                "PAPERCLIP_HOST": machine.address,
                "PAPERCLIP_DEPLOYMENT_MODE": "authenticated",
            }
            child.argv = machine.argv(child.argv)
            self.control_planes.append(child)
            child.start()
        launch = self.shared_sessions(self.procs.fake_launch(self.script_dir, self.fake_log))
        dial = runners_dial if runners_dial is not None else list(range(len(self.replicas)))
        for index, machine in enumerate(self.runner_machines):
            credential = self.procs.runner_credential(f"runner-{self.network.tag}-{index}", url)
            order = dial[index % len(dial) :] + dial[: index % len(dial)]
            child = self.procs.runner(
                index, [self.url(i) for i in order], credential, self.folder, launch
            )
            child.argv = machine.argv(child.argv)
            self.runners.append(child)

    def shared_sessions(self, launch: str) -> str:
        """The fake app-server keeping its threads in one folder both runners reach.

        A run whose runner was lost may go on on the other runner. Codex keeps a thread
        on its own machine (each run's ``CODEX_HOME``): there the thread cannot be
        resumed, and the fake, which plays its script by the thread's turn, would play
        the first turn again (its comments twice). A shared store lets it resume the
        thread, as a provider whose sessions live off the machine does.
        """
        import json

        home = self.folder / "codex-home"
        home.mkdir(exist_ok=True)
        home.chmod(0o777)  # the runners' providers may run as another user
        profiles = json.loads(launch)
        for provider in profiles.values():
            for name, argv in provider.items():
                provider[name] = ["env", f"CODEX_HOME={home}", *argv]
        return json.dumps(profiles)

    def start_runners(self) -> None:
        for child in self.runners:
            child.start()

    def stop(self) -> None:
        for child in [*self.runners, *self.control_planes]:
            child.stop(5)
        self.postgres.stop()
        self.network.close()
