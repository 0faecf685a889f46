"""A whole p4cache on one machine: namespaces, veths, softnic, memcached, agents, controller.

Hosts are network namespaces on one switch. The switch is ``softnic run`` (or, later,
``simple_switch_grpc``) in the root namespace with one veth pair per host; its P4Runtime server
listens on loopback, where the controller (also in the root namespace) reaches it. Each memcached
host also has a management veth to the root namespace, which carries the controller's channel to
the host agent; data traffic (clients' UDP GETs, TCP through the agents' write gates, the agents'
invalidations) crosses the switch.

Addresses (one /24 data network, static ARP everywhere: the program bridges on the destination
MAC and answers no ARP):
    memcached servers m1.. : 10.0.0.1.. on switch ports 1..
    clients c1..          : 10.0.0.101.. on the ports after them
    the "switch" address   : 10.0.0.254 (agents address their control datagrams there; the switch
                             intercepts UDP 11311 from trusted agents whatever the destination)
    management, server i   : 10.250.x.1 (root) — 10.250.x.2 (host), x the lowest /24 no
                             other lab on the machine uses
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from p4cache import agent_protocol
from p4cache import dataplane as dp
from p4cache import program as p4program
from p4cache.topo import placement as pl
from softnic import netns

# Every name a lab creates starts with PREFIX and the creating process's pid (``p4c<pid>-m1``,
# ``p4c<pid>s1``, ...), so a lab left behind by a killed run is removed by the next one
# (``remove_stale``); the processes it starts are recorded in RUN_DIR for that.
PREFIX = "p4c"
RUN_DIR = Path("/run/p4cache-lab")
MGMT_BASE = "10.250"

TARGETS = ("softnic", "xdp")     # softnic run's engines (--engine python / xdp)
MEMCACHED_UDP = 11211
MEMCACHED_TCP_BACKEND = 11212
AGENT_CONTROL_PORT = agent_protocol.DEFAULT_PORT
CONTROLLER_STATUS_PORT = 11214
SWITCH_ADDR = "10.0.0.254"
SWITCH_MAC = "02:00:00:00:00:fe"


@dataclass(frozen=True)
class LabSpec:
    servers: int = 1
    clients: int = 1
    slots: int | None = None          # controller's cache capacity (None: the program's)
    memcached_mb: int = 64
    target: str = "softnic"           # softnic's Python engine, or "xdp": its kernel engine
    placement: str = "switch"         # or "host": on the server (p4cache.topo.placement)


@dataclass
class Host:
    name: str
    ns: str
    ip: str
    mac: str
    port: int                          # switch port
    veth: str                          # the switch side of its veth pair
    mgmt_ip: str | None = None         # management address inside the host (servers)
    mgmt_peer: str | None = None       # root-namespace end of the management veth

    @property
    def agent_control(self) -> str:
        return f"{self.mgmt_ip}:{AGENT_CONTROL_PORT}"


@dataclass(frozen=True)
class ServerEntry:
    """A memcached server as the controller's config names it."""
    name: str
    ip: str
    mac: str
    switch_port: int
    agent: str                         # the agent's control address, host:port


def switch_argv(grpc_addr: str, cpu_port: int, ports: dict[int, str],
                program: str = "softnic", device_id: int | None = None,
                log_file: str | None = None, extra: Sequence[str] = ()) -> list[str]:
    """``softnic run`` (or ``simple_switch_grpc``, same flags) with no program, one
    ``-i PORT@IFACE`` per port; the controller pushes the pipeline over P4Runtime. ``extra``:
    softnic's own options (``--engine xdp ...``)."""
    if program == "softnic":
        argv = [_venv_bin("softnic"), "run", "--no-p4", *extra]
    else:
        argv = [program, "--no-p4"]
    for port, iface in sorted(ports.items()):
        argv += ["-i", f"{port}@{iface}"]
    if device_id is not None:
        argv += ["--device-id", str(device_id)]
    if log_file is not None:
        argv += ["--log-file", log_file]
    grpc = ["--grpc-server-addr", grpc_addr, "--cpu-port", str(cpu_port)]
    return [*argv, *grpc] if program == "softnic" else [*argv, "--", *grpc]


def memcached_argv(ip: str, udp: int, tcp: int, mb: int = 64) -> list[str]:
    """memcached on its UDP port and its TCP (gate backend) port, on ``ip`` and loopback."""
    return ["memcached", "-U", str(udp), "-p", str(tcp), "-l", f"{ip},127.0.0.1", "-t", "2",
            "-m", str(mb), "-u", "root"]


def agent_argv(ip: str, udp: int, tcp: int, switch_addr: str, control: str,
               *extra: str) -> list[str]:
    """The host agent: the TCP write gate on ``ip:udp`` in front of memcached's TCP port."""
    return [_venv_bin("p4cache-agent"), "--listen", f"{ip}:{udp}",
            "--memcached", f"127.0.0.1:{tcp}",
            "--switch", f"{switch_addr}:{dp.CACHE_CTRL_PORT}", "--control", control, *extra]


def backend_guard_argv(tcp: int) -> list[str]:
    """nft: memcached's TCP port is the gate's backend, nobody but the host itself reaches it
    (run inside the host's namespace; the table goes with the namespace)."""
    return ["nft", "add table inet p4cache; "
            "add chain inet p4cache input { type filter hook input priority 0; }; "
            f'add rule inet p4cache input tcp dport {tcp} iifname != "lo" drop']


def controller_config(grpc_addr: str, program: p4program.Program, servers: list[ServerEntry],
                      l2: list[tuple[str, int]], clients: list[str], status_listen: str,
                      slots: int | None = None, cpu_port: int = dp.CPU_PORT, device_id: int = 0,
                      **cache: object) -> dict:
    """The controller's configuration (p4cache.controller.config): the switch, the program,
    the servers and their agents, one l2 bridge entry per (MAC, port)."""
    entries = [{"table": dp.TABLE_L2, "match": {"dst_addr": mac},
                "action_name": "CacheIngress.forwarding.bridge",
                "action_params": {"port": port}} for mac, port in l2]
    cache_cfg: dict = dict(cache)
    if slots is not None:
        cache_cfg.setdefault("slots", slots)
    return {
        "switch": {"grpc": grpc_addr, "device_id": device_id, "election_id": [0, 1],
                   "cpu_port": cpu_port},
        "program": {"bmv2_json": str(program.json_path), "p4info": str(program.p4info_path)},
        "servers": [{"name": s.name, "ip": s.ip, "mac": s.mac, "switch_port": s.switch_port,
                     "agent": s.agent} for s in servers],
        "clients": clients,
        "table_entries": entries,
        "cache": cache_cfg,
        "status_listen": status_listen,
    }


def mgmt_lock() -> contextlib.AbstractContextManager[None]:
    """Held while a lab (or ``p4cache up``) picks and assigns its management subnets: two
    starting at once must not pick the same /24 (the second route would steal the first's
    agents)."""
    return netns.file_lock(RUN_DIR / "mgmt.lock")


def remove_stale() -> list[str]:
    """Remove the processes, namespaces and root links of labs whose creating process is gone."""
    return netns.remove_stale(PREFIX, RUN_DIR)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _venv_bin(name: str) -> str:
    path = Path(sys.executable).parent / name
    return str(path) if path.exists() else name


@dataclass
class _Proc:
    name: str
    popen: subprocess.Popen
    log: Path


@dataclass
class Lab:
    spec: LabSpec
    workdir: Path
    tag: str = field(default_factory=lambda: f"{PREFIX}{os.getpid()}")
    servers: list[Host] = field(default_factory=list)
    clients: list[Host] = field(default_factory=list)
    grpc_addr: str = ""
    program: p4program.Program | None = None
    _procs: dict[str, _Proc] = field(default_factory=dict)
    _switch_argv: list[str] = field(default_factory=list)

    # ---- bring up / tear down -------------------------------------------------------------
    def __enter__(self) -> Lab:
        try:
            self.up()
        except BaseException:
            self.down()
            raise
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.down()

    def up(self) -> None:
        for tool in ("ip", "ethtool", "memcached", "nft"):
            if shutil.which(tool) is None:
                raise RuntimeError(f"lab: '{tool}' is not installed (make setup installs it)")
        if os.geteuid() != 0:
            raise RuntimeError("lab: network namespaces and veths need root")
        if self.spec.target not in TARGETS:
            raise RuntimeError(f"lab: unknown target {self.spec.target!r}; use one of {TARGETS}")
        try:
            pl.check(self.spec.placement, self.spec.target)
        except pl.PlacementError as e:
            raise RuntimeError(f"lab: {e}") from None
        if self.on_host and self.spec.servers != 1:
            raise RuntimeError("lab: --placement host runs one server (its program has one "
                               "controller); `p4cache up --placement host` runs several")
        remove_stale()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.program = p4program.build()
        hosts: list[Host] = []
        for i in range(self.spec.servers):
            n = i + 1
            hosts.append(Host(f"m{n}", f"{self.tag}-m{n}", f"10.0.0.{n}",
                              f"02:00:00:00:00:{n:02x}", n, f"{self.tag}s{n}",
                              mgmt_peer=f"{self.tag}g{n}"))
        for i in range(self.spec.clients):
            n = i + 1
            port = self.spec.servers + n
            hosts.append(Host(f"c{n}", f"{self.tag}-c{n}", f"10.0.0.{100 + n}",
                              f"02:00:00:00:01:{n:02x}", port, f"{self.tag}s{port}"))
        self.servers = hosts[:self.spec.servers]
        self.clients = hosts[self.spec.servers:]
        for h in hosts:
            netns.add_namespace(h.ns)
            netns.add_veth(h.veth, f"{self.tag}t{h.port}", h.ns, "eth0")
            netns.run(["ip", "link", "set", "eth0", "address", h.mac], ns=h.ns)
            netns.run(["ip", "addr", "add", f"{h.ip}/24", "dev", "eth0"], ns=h.ns)
            for other in hosts:
                if other is not h:
                    netns.run(["ip", "neigh", "replace", other.ip, "lladdr", other.mac,
                               "dev", "eth0", "nud", "permanent"], ns=h.ns)
            netns.run(["ip", "neigh", "replace", SWITCH_ADDR, "lladdr", SWITCH_MAC, "dev",
                       "eth0", "nud", "permanent"], ns=h.ns)
        for h in self.servers:
            assert h.mgmt_peer
            netns.add_veth(h.mgmt_peer, f"{self.tag}h{h.port}", h.ns, "mgmt0")
            # Each server gets a management /24 no other lab on this machine uses.
            with mgmt_lock():
                x = netns.free_octet(MGMT_BASE)
                netns.run(["ip", "addr", "add", f"{MGMT_BASE}.{x}.1/24", "dev", h.mgmt_peer])
            h.mgmt_ip = f"{MGMT_BASE}.{x}.2"
            netns.run(["ip", "addr", "add", f"{h.mgmt_ip}/24", "dev", "mgmt0"], ns=h.ns)
            # memcached's TCP port is the gate's backend: nobody but the host itself reaches it.
            netns.run(backend_guard_argv(MEMCACHED_TCP_BACKEND), ns=h.ns)
        if self.on_host:
            self._wire_host_placement(hosts)
        else:
            self.grpc_addr = f"127.0.0.1:{_free_port()}"
            xdp = list(pl.XDP_ENGINE) if self.spec.target == "xdp" else []
            self._switch_argv = switch_argv(self.grpc_addr, dp.CPU_PORT,
                                            {h.port: h.veth for h in hosts}, extra=xdp)
            if xdp:
                for h in hosts:    # the program redirects frames into the switch's ports
                    pl.receive_redirects("eth0", h.ns)
        self.start_switch()
        for i in range(len(self.servers)):
            self.start_memcached(i)

    @property
    def on_host(self) -> bool:
        return self.spec.placement == pl.HOST

    @property
    def bridge(self) -> str:
        """The plain bridge hosts share in the host placement."""
        return f"{self.tag}br"

    def _wire_host_placement(self, hosts: list[Host]) -> None:
        """No P4 switch: the hosts' veths on a kernel bridge, the program on the server's eth0
        (and its agent's veth), its P4Runtime server on the management address."""
        pl.add_bridge(self.bridge, [h.veth for h in hosts])
        server = self.servers[0]
        assert server.mgmt_ip
        pl.receive_redirects(server.veth)     # hits leave the server's eth0 by redirect
        pl.wire_server(server.ns, server.ip, SWITCH_ADDR, SWITCH_MAC)
        self.grpc_addr = f"{server.mgmt_ip}:{pl.GRPC_PORT}"
        self._switch_argv = switch_argv(self.grpc_addr, dp.CPU_PORT, pl.server_ports(),
                                        extra=pl.server_engine_args())

    def down(self) -> None:
        for name in list(self._procs):
            self.stop(name)
        netns.kill_recorded(RUN_DIR, self.tag)
        for h in self.servers + self.clients:
            netns.delete_namespace(h.ns)
            netns.delete_link(h.veth)
            if h.mgmt_peer:
                netns.delete_link(h.mgmt_peer)
        if self.on_host:
            netns.delete_link(self.bridge)

    # ---- processes ------------------------------------------------------------------------
    def popen(self, ns: str | None, argv: list[str], name: str) -> subprocess.Popen:
        """Start ``argv`` in ``ns`` (None: root), logging to ``workdir/<name>.log``."""
        if name in self._procs and self._procs[name].popen.poll() is None:
            raise RuntimeError(f"lab: process {name} is already running")
        log = self.workdir / f"{name}.log"
        fh = open(log, "ab")  # noqa: SIM115 - the child owns it
        p = subprocess.Popen([*netns.exec_prefix(ns), *argv], stdout=fh,
                             stderr=subprocess.STDOUT, start_new_session=True)
        fh.close()
        netns.record_process(RUN_DIR, self.tag, p.pid, argv[0])
        self._procs[name] = _Proc(name, p, log)
        return p

    def stop(self, name: str, sig: int = signal.SIGTERM, wait: float = 5.0) -> None:
        proc = self._procs.pop(name, None)
        if proc is None or proc.popen.poll() is not None:
            return
        try:
            os.killpg(proc.popen.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.popen.wait(wait)
        except subprocess.TimeoutExpired:
            os.killpg(proc.popen.pid, signal.SIGKILL)
            proc.popen.wait(5)

    def kill(self, name: str) -> None:
        """SIGKILL, no chance to clean up: what a crash looks like."""
        self.stop(name, signal.SIGKILL)

    def running(self, name: str) -> bool:
        proc = self._procs.get(name)
        return proc is not None and proc.popen.poll() is None

    def log(self, name: str) -> str:
        path = self.workdir / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    @property
    def switch_ns(self) -> str | None:
        """Where the switch process runs: the root namespace, or the server's (host placement)."""
        return self.servers[0].ns if self.on_host else None

    def start_switch(self) -> None:
        self.popen(self.switch_ns, self._switch_argv, "switch")
        host, port = self.grpc_addr.rsplit(":", 1)
        wait_tcp(host, int(port), 20.0, what="softnic's P4Runtime server",
                 alive=lambda: self.running("switch"), log=lambda: self.log("switch"))

    def restart_switch(self) -> None:
        """Kill the switch and start it again empty (no pipeline, no state)."""
        self.kill("switch")
        if self.spec.target == "xdp":
            # an XDP program attached over netlink outlives its process: take it off, or it
            # would go on answering from the old cache until the new pipeline replaces it
            ifaces = pl.server_ports().values() if self.on_host else \
                [h.veth for h in self.servers + self.clients]
            for iface in ifaces:
                for mode in ("xdpdrv", "xdpgeneric"):
                    netns.run(["ip", "link", "set", "dev", iface, mode, "off"],
                              ns=self.switch_ns, check=False)
        self.start_switch()

    def start_memcached(self, i: int) -> None:
        h = self.servers[i]
        self.popen(h.ns, memcached_argv(h.ip, MEMCACHED_UDP, MEMCACHED_TCP_BACKEND,
                                        self.spec.memcached_mb), f"memcached-{h.name}")
        wait_tcp_in(h.ns, "127.0.0.1", MEMCACHED_TCP_BACKEND, 10.0, f"memcached on {h.name}")

    def agent_argv(self, i: int, *extra: str) -> list[str]:
        h = self.servers[i]
        return agent_argv(h.ip, MEMCACHED_UDP, MEMCACHED_TCP_BACKEND, SWITCH_ADDR,
                          h.agent_control, *extra)

    def start_agent(self, i: int, *extra: str) -> None:
        h = self.servers[i]
        self.popen(h.ns, self.agent_argv(i, *extra), f"agent-{h.name}")
        wait_tcp_in(h.ns, h.ip, MEMCACHED_UDP, 10.0, f"the agent on {h.name}",
                    alive=lambda: self.running(f"agent-{h.name}"),
                    log=lambda: self.log(f"agent-{h.name}"))

    def stop_agent(self, i: int, crash: bool = False) -> None:
        name = f"agent-{self.servers[i].name}"
        self.kill(name) if crash else self.stop(name)

    # ---- controller -----------------------------------------------------------------------
    def controller_config(self, **cache: object) -> dict:
        """The controller's configuration for this lab (p4cache.controller.config)."""
        assert self.program is not None
        hosts = self.servers + self.clients
        if self.on_host:
            servers = [ServerEntry(h.name, h.ip, h.mac, pl.AGENT_PORT, h.agent_control)
                       for h in self.servers]
            l2 = pl.server_l2(self.servers[0].mac)
        else:
            servers = [ServerEntry(h.name, h.ip, h.mac, h.port, h.agent_control)
                       for h in self.servers]
            l2 = [(h.mac, h.port) for h in hosts]
        return controller_config(
            self.grpc_addr, self.program, servers=servers, l2=l2, clients=["10.0.0.0/24"],
            status_listen=f"127.0.0.1:{self.status_port}", slots=self.spec.slots, **cache)

    @property
    def status_port(self) -> int:
        if not hasattr(self, "_status_port"):
            self._status_port = _free_port()
        return self._status_port

    def start_controller(self, *extra: str, **cache: object) -> None:
        cfg = self.workdir / "controller.json"
        cfg.write_text(json.dumps(self.controller_config(**cache), indent=2))
        self.popen(None, [_venv_bin("p4cache-controller"), "run", "--config", str(cfg), *extra],
                   "controller")
        wait_tcp("127.0.0.1", self.status_port, 30.0, what="the controller's status server",
                 alive=lambda: self.running("controller"), log=lambda: self.log("controller"))

    def stop_controller(self, crash: bool = False) -> None:
        self.kill("controller") if crash else self.stop("controller")

    def host_run(self, host: Host, argv: list[str], timeout: float = 60.0
                 ) -> subprocess.CompletedProcess:
        return subprocess.run([*netns.exec_prefix(host.ns), *argv], capture_output=True,
                              text=True, timeout=timeout, check=False)


def _tail(text: str, n: int = 30) -> str:
    return "\n".join(text.splitlines()[-n:])


def wait_tcp(host: str, port: int, timeout: float, what: str,
             alive: Callable[[], bool] | None = None, log: Callable[[], str] | None = None) -> None:
    """Wait until ``host:port`` accepts TCP connections; RuntimeError naming ``what`` (with the
    tail of ``log()``) when ``alive()`` says the process exited or ``timeout`` s pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if alive is not None and not alive():
            raise RuntimeError(f"{what} exited before it was ready:\n"
                               f"{_tail(log()) if log else ''}")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {host}:{port} within {timeout:.0f} s:\n"
                       f"{_tail(log()) if log else ''}")


def wait_tcp_in(ns: str, host: str, port: int, timeout: float, what: str, alive=None,  # noqa: ANN001
                log=None) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    probe = [sys.executable, "-c",
             "import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 0.5)",
             host, str(port)]
    while time.monotonic() < deadline:
        if alive is not None and not alive():
            raise RuntimeError(f"{what} exited before it was ready:\n"
                               f"{_tail(log()) if log else ''}")
        if subprocess.run([*netns.exec_prefix(ns), *probe], capture_output=True,
                          check=False).returncode == 0:
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on {host}:{port} within {timeout:.0f} s:\n"
                       f"{_tail(log()) if log else ''}")
