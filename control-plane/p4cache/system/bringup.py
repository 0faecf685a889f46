"""``up``: compile, build the Mininet network, start memcached, the agents and the controller.

Order (each step recorded in the state file before the next can fail): cleanup of a previous
run, program, namespaces and switch (p4cache.topo.net), management veths and the nft guard of
memcached's backend port, memcached and the agents, the controller, then wait until the
controller has pushed the pipeline and sees every agent. Any error or Ctrl-C removes what was
started (p4cache.system.teardown) and re-raises.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from p4cache import paths
from p4cache import program as p4program
from p4cache.controller import status as status_mod
from p4cache.lab import lab as labmod
from p4cache.system import procs, teardown
from p4cache.system.state import HostState, ProcState, RunState, run_dir_of
from p4cache.topo import Topology, load
from p4cache.topo import net as topo_net
from p4cache.topo import placement as pl
from p4cache.topo.switches import P4RuntimeSwitch
from softnic import netns

DEFAULT_TOPOLOGY = paths.default_topology()
MGMT_BASE = "10.251"
# target -> (compiler, switch binary); xdp is softnic run's kernel engine (docs/xdp.md)
TARGETS = {"softnic": ("softnic", None), "xdp": ("softnic", None),
           "bmv2": ("p4c-bm2-ss", "simple_switch_grpc")}
READY_TIMEOUT = 60.0
DEFAULT_STATUS = "127.0.0.1:11214"   # p4cache-controller status's default --connect


class UpError(RuntimeError):
    """``up`` cannot proceed; the message says why and what to do."""


def _check_tools(target: str, placement: str) -> None:
    if os.geteuid() != 0:
        raise UpError("p4cache up needs root (network namespaces, veths, nft); run it with sudo")
    if target not in TARGETS:
        raise UpError(f"unknown target {target!r}; use softnic (the default), xdp or bmv2")
    try:
        pl.check(placement, target)
    except pl.PlacementError as e:
        raise UpError(str(e)) from None
    if target == "xdp":
        from softnic.runtime.xdp.libbpf import missing_requirements
        missing = missing_requirements()
        if missing:
            raise UpError("--target xdp cannot run here: " + "; ".join(missing) +
                          "; use --target softnic (the default)")
    if target == "bmv2":
        missing = [t for t in ("p4c-bm2-ss", "simple_switch_grpc") if shutil.which(t) is None]
        if missing:
            raise UpError(f"--target bmv2 needs {' and '.join(missing)} on PATH, not found; "
                          "install BMv2 and p4c, or use --target softnic (the default)")
    for tool in ("ip", "ethtool", "memcached", "nft", "mnexec", "ifconfig"):
        if shutil.which(tool) is None:
            raise UpError(f"'{tool}' is not installed; `make setup` installs it")


def _listening(addr: str) -> bool:
    host, _, port = addr.rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=0.3):
            return True
    except OSError:
        return False


def _free_status_addr() -> str:
    if not _listening(DEFAULT_STATUS):
        return DEFAULT_STATUS
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def _hosts(topo: Topology) -> list[HostState]:
    out = []
    servers = {h.name: i + 1 for i, h in enumerate(topo.servers)}
    for h in topo.hosts:
        hs = HostState(name=h.name, role=h.role, ns=topo_net.ns_name(h.name), ip=h.ip,
                       prefix=h.prefix, mac=h.mac, switch=h.switch, switch_port=h.port,
                       iface=topo_net.HOST_IFACE)
        if h.memcached is not None:
            hs.udp_port = h.memcached.udp
            hs.tcp_port = h.memcached.udp
            hs.backend_port = h.memcached.tcp
            hs.mgmt_iface = f"p4cmgmt{servers[h.name]}"
        out.append(hs)
    return out


class _Up:
    def __init__(self, st: RunState, topo: Topology, slots: int | None,
                 say: Callable[[str], None]) -> None:
        self.st, self.topo, self.slots, self.say = st, topo, slots, say

    def proc(self, name: str, argv: list[str], ns: str | None = None) -> subprocess.Popen:
        log = self.st.log_dir / f"{name}.log"
        popen = procs.spawn(argv, log, ns)
        self.st.processes.append(ProcState(name, popen.pid, Path(argv[0]).name, str(log), ns))
        self.st.save()
        return popen

    def wait_listening(self, popen: subprocess.Popen, host: HostState | None, addr: str,
                       what: str, timeout: float = 15.0) -> None:
        log = next((p.log for p in self.st.processes if p.pid == popen.pid), "")
        ip, _, port = addr.rpartition(":")
        probe = ["python3", "-c", "import socket,sys; socket.create_connection((sys.argv[1], "
                 "int(sys.argv[2])), 0.5)", ip, port]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if popen.poll() is not None:
                raise UpError(f"{what} exited at start ({popen.returncode}); see {log}:\n"
                              f"{_tail(log)}")
            if _listening(addr) if host is None else _probe_ok(
                    [*self.st.exec_prefix(host.name), *probe]):
                return
            time.sleep(0.1)
        raise UpError(f"{what} did not listen on {addr} within {timeout:.0f} s; see {log}")

    def network(self) -> None:
        def on_switch(sw: P4RuntimeSwitch) -> None:
            assert sw.proc is not None
            self.st.processes.append(ProcState(f"switch-{sw.name}", sw.proc.pid,
                                               sw.target, sw.log_file + ".out"))
            self.st.switches[sw.name] = {"grpc_addr": sw.grpc_addr, "log": sw.log_file,
                                         "interfaces": sw.data_ports()}
            self.st.save()
        topo_net.build(self.topo, self.st.target, self.st.log_dir, on_switch=on_switch,
                       placement=self.st.placement)

    def server_programs(self) -> None:
        """The host placement: each server's program on its own eth0, the agent's veth pair,
        its P4Runtime server on the management address (p4cache.topo.placement)."""
        sw = self.topo.switches[0]
        for h in self.st.servers:
            assert h.mgmt_ip
            pl.receive_redirects(f"{sw.name}-eth{h.switch_port}")  # hits leave by redirect
            pl.wire_server(h.ns, h.ip, sw.ip, sw.mac)
            grpc = f"{h.mgmt_ip}:{pl.GRPC_PORT}"
            log = self.st.log_dir / f"switch-{h.name}.log"
            p = self.proc(f"switch-{h.name}", labmod.switch_argv(
                grpc, sw.cpu_port, pl.server_ports(), extra=pl.server_engine_args(),
                log_file=str(log)), h.ns)
            self.wait_listening(p, None, grpc, f"{h.name}'s program (softnic run --engine xdp)",
                                30)
            self.st.switches[h.name] = {"grpc_addr": grpc, "log": str(log),
                                        "interfaces": pl.server_ports()}
            self.st.grpc_addr = ", ".join(s["grpc_addr"] for s in self.st.switches.values())
            self.st.save()

    def management(self) -> None:
        """A veth root <-> each server (mgmt0 inside) on a free 10.251.x.0/24: the controller's
        channel to the agent. memcached's backend port is closed to everything but loopback."""
        for h in self.st.servers:
            assert h.mgmt_iface and h.backend_port
            netns.add_veth(h.mgmt_iface, f"{h.mgmt_iface}p", h.ns, "mgmt0")
            with labmod.mgmt_lock():
                x = netns.free_octet(MGMT_BASE)
                netns.run(["ip", "addr", "add", f"{MGMT_BASE}.{x}.1/24", "dev", h.mgmt_iface])
            h.mgmt_ip = f"{MGMT_BASE}.{x}.2"
            netns.run(["ip", "addr", "add", f"{h.mgmt_ip}/24", "dev", "mgmt0"], ns=h.ns)
            ports = self.topo.host(h.name).memcached
            assert ports is not None
            h.agent_control = f"{h.mgmt_ip}:{ports.agent_control}"
            netns.run(labmod.backend_guard_argv(h.backend_port), ns=h.ns)
            self.st.save()

    def servers(self) -> None:
        sw = self.topo.switches[0]
        for h in self.st.servers:
            assert h.udp_port and h.backend_port and h.agent_control
            p = self.proc(f"memcached-{h.name}",
                          labmod.memcached_argv(h.ip, h.udp_port, h.backend_port), h.ns)
            self.wait_listening(p, h, f"127.0.0.1:{h.backend_port}", f"memcached on {h.name}")
            p = self.proc(f"agent-{h.name}", labmod.agent_argv(
                h.ip, h.udp_port, h.backend_port, sw.ip, h.agent_control), h.ns)
            self.wait_listening(p, h, f"{h.ip}:{h.tcp_port}", f"the agent on {h.name}")

    def controller(self, program: p4program.Program) -> None:
        """One controller for the switch; with the host placement, one per server's program,
        each with its own slots and status server."""
        hosts = self.st.hosts
        nets = sorted({str(ipaddress.IPv4Interface(f"{h.ip}/{h.prefix}").network)
                       for h in hosts})
        cpu_port = self.topo.switches[0].cpu_port
        if self.st.placement == pl.HOST:
            for i, h in enumerate(self.st.servers):
                status = self.st.status_addr if i == 0 else _free_status_addr()
                cfg = labmod.controller_config(
                    self.st.switches[h.name]["grpc_addr"], program,
                    servers=[labmod.ServerEntry(h.name, h.ip, h.mac, pl.AGENT_PORT,
                                                h.agent_control or "")],
                    l2=pl.server_l2(h.mac), clients=nets,
                    status_listen=status, slots=self.slots, cpu_port=cpu_port)
                self.start_controller(f"controller-{h.name}", cfg, status)
            return
        cfg = labmod.controller_config(
            self.st.grpc_addr, program,
            servers=[labmod.ServerEntry(h.name, h.ip, h.mac, h.switch_port, h.agent_control or "")
                     for h in self.st.servers],
            l2=[(h.mac, h.switch_port) for h in hosts], clients=nets,
            status_listen=self.st.status_addr, slots=self.slots, cpu_port=cpu_port)
        self.start_controller("controller", cfg, self.st.status_addr)

    def start_controller(self, name: str, cfg: dict, status_addr: str) -> None:
        path = Path(self.st.run_dir) / f"{name}.json"
        path.write_text(json.dumps(cfg, indent=2) + "\n")
        self.st.controller_config = self.st.controller_config or str(path)
        self.st.controllers[name] = status_addr
        p = self.proc(name, [labmod._venv_bin("p4cache-controller"), "run", "--config", str(path)])
        self.wait_listening(p, None, status_addr, f"the status server of {name}", 30)
        self.wait_ready(p, name, status_addr)

    def wait_ready(self, p: subprocess.Popen, name: str, status_addr: str) -> None:
        """Until the controller has pushed the pipeline and every agent is up."""
        deadline = time.monotonic() + READY_TIMEOUT
        last = "no status yet"
        while time.monotonic() < deadline:
            if p.poll() is not None:
                log = self.st.log_dir / f"{name}.log"
                raise UpError(f"the controller exited ({p.returncode}); see {log}:\n"
                              f"{_tail(str(log))}")
            try:
                s = status_mod.fetch(status_addr, timeout=2.0)
            except (OSError, ValueError) as e:
                s, last = {}, str(e)
            sw = s.get("switch", {})
            down = [a["name"] for a in s.get("agents", []) if not a.get("up")]
            if sw.get("connected") and sw.get("pipeline_pushed") and s.get("agents") is not None \
                    and not down:
                return
            if s:
                last = (f"switch connected={sw.get('connected')} pipeline_pushed="
                        f"{sw.get('pipeline_pushed')} last_error={sw.get('last_error')}; "
                        f"agents not up: {down}")
            time.sleep(0.2)
        raise UpError(f"the controller was not ready within {READY_TIMEOUT:.0f} s ({last}); "
                      f"see the logs in {self.st.log_dir}")


def _probe_ok(argv: list[str]) -> bool:
    return subprocess.run(argv, capture_output=True, check=False).returncode == 0


def _tail(path: str, n: int = 20) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def up(topo_path: str | Path | None = None, target: str = "softnic",
       run_dir: str | Path | None = None, slots: int | None = None,
       say: Callable[[str], None] | None = None, placement: str = pl.SWITCH) -> RunState:
    """Bring the whole system up and return its state (see p4cache.system). Raises UpError
    (or TopologyError) with what to do; on any error or Ctrl-C, removes what it started.
    ``placement`` host: the program on each server's interface (p4cache.topo.placement)."""
    say = say or (lambda msg: None)
    _check_tools(target, placement)
    topo = load(topo_path or DEFAULT_TOPOLOGY)
    if len(topo.switches) != 1:
        raise UpError(f"{topo.source}: {len(topo.switches)} switches; the controller drives one "
                      "switch, so p4cache up runs one-switch topologies")
    if not topo.servers:
        raise UpError(f"{topo.source}: no host has role memcached; add one")
    d = run_dir_of(run_dir)
    with teardown.locked(d):
        removed = teardown.remove(d)
        if removed:
            say(f"removed leftovers of a previous run: {', '.join(removed)}")
        compiler, _ = TARGETS[target]
        program = p4program.build(compiler=compiler)
        sw = topo.switches[0]
        on_host = placement == pl.HOST     # then the servers' programs listen, not the switch
        deadline = time.monotonic() + 5.0   # a switch just removed may still be exiting
        while not on_host and _listening(sw.grpc_addr) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not on_host and _listening(sw.grpc_addr):
            raise UpError(f"something already listens on {sw.grpc_addr} (another switch?); stop "
                          f"it or change switches.{sw.name}.grpc_addr in {topo.source}")
        st = RunState(run_dir=str(d), target=target, placement=placement,
                      topology=str(Path(topo.source).resolve()),
                      builder_pid=os.getpid(), grpc_addr="" if on_host else sw.grpc_addr,
                      status_addr=_free_status_addr(),
                      program={"bmv2_json": str(program.json_path),
                               "p4info": str(program.p4info_path)},
                      hosts=_hosts(topo))
        st.namespaces = [h.ns for h in st.hosts]
        st.interfaces = [f"{sw.name}-eth{h.switch_port}" for h in st.hosts] + \
            [h.mgmt_iface for h in st.servers if h.mgmt_iface] + \
            ([sw.name] if on_host else [])    # the plain bridge
        st.log_dir.mkdir(parents=True, exist_ok=True)
        st.save()
        try:
            u = _Up(st, topo, slots, say)
            if on_host:
                say(f"network: {len(topo.hosts)} hosts on the bridge {sw.name}, the cache's "
                    f"program on each of {len(topo.servers)} servers (xdp)")
            else:
                say(f"network: {len(topo.hosts)} hosts on {sw.name} ({target})")
            u.network()
            u.management()
            if on_host:
                say("the servers' programs")
                u.server_programs()
            say("memcached and agents")
            u.servers()
            say("controller")
            u.controller(program)
            st.complete = True
            st.save()
        except BaseException:
            say("error: removing what was started")
            teardown.remove(d)
            raise
    return st


def down(run_dir: str | Path | None = None) -> list[str]:
    """Remove the system up in ``run_dir`` and any leftovers; what was removed (empty: none)."""
    d = run_dir_of(run_dir)
    with teardown.locked(d):
        return teardown.remove(d)
