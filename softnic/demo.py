"""``softnic-demo`` (what ``make run`` runs until the cache exists): a small P4 program, end to end.

It does what a p4lang/tutorials exercise does, with softnic in place of p4c and BMv2, and each
step through the same interface a user would use:

1. ``softnic compile`` (a subprocess) turns ``<topo>/basic.p4`` into BMv2 JSON + P4Info;
2. the hosts of ``topology.json`` get one network namespace each, wired by veth pairs to the
   switch ports named in ``links``; their ``commands`` (static ARP, default route) run inside;
3. ``softnic run --no-p4`` (a subprocess) attaches to the switch ends; this process then acts as
   the controller: it pushes the pipeline and installs ``s1-runtime.json`` over P4Runtime, by
   name, with p4runtime-shell;
4. every ordered host pair pings, one pair exchanges UDP datagrams, and the program's counters
   are read back over P4Runtime;
5. a summary says what crossed the switch and, plainly, that the memcached cache is not built.

The switch runs in the root namespace, as Mininet runs its switches: that keeps its P4Runtime
server reachable on 127.0.0.1 from this process; the veth names carry a unique tag, so parallel
runs do not collide. Everything started is torn down on exit, on errors and on Ctrl-C/SIGTERM.
The exit code is 0 when every pair got replies, 1 when traffic did not pass or a step failed,
and 77 (the "skipped" convention of automake) when ``--target bmv2`` is asked for but BMv2 is
not installed, because then nothing was tested.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from softnic.netns import HostSpec, Topology, netns_unavailable_reason

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TOPO = REPO_ROOT / "topo" / "l3-demo"
EXIT_SKIPPED = 77
PING_COUNT = 3
UDP_COUNT = 20
UDP_PORT = 7777


class DemoError(Exception):
    """A step failed; the message says which and why (no traceback for the user)."""


# --------------------------------------------------------------------------- topology files


@dataclass
class TopoSpec:
    """What ``topology.json`` says, for one switch (the only shape this demo runs)."""

    hosts: list[HostSpec]
    commands: dict[str, list[str]]
    switch: str
    runtime_json: Path


def load_topology(topo_dir: Path) -> TopoSpec:
    """Read a tutorials-style ``topology.json``: hosts, one switch, links ``[host, sw-pN]``."""
    path = topo_dir / "topology.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DemoError(f"cannot read {path}: {exc}") from None
    switches = data.get("switches", {})
    if len(switches) != 1:
        raise DemoError(f"{path}: the demo runs exactly one switch, found {len(switches)}")
    [(sw_name, sw)] = switches.items()
    ports: dict[str, int] = {}
    for link in data.get("links", []):
        ends = [str(e) for e in link[:2]]
        host = next((e for e in ends if e in data.get("hosts", {})), None)
        other = next((e for e in ends if e != host), "")
        m = re.fullmatch(rf"{re.escape(sw_name)}-p(\d+)", other)
        if host is None or m is None:
            raise DemoError(f"{path}: link {link} is not [host, {sw_name}-pN]")
        ports[host] = int(m.group(1))
    hosts, commands = [], {}
    for name, h in data.get("hosts", {}).items():
        if name not in ports:
            raise DemoError(f"{path}: host {name} has no link to {sw_name}")
        hosts.append(HostSpec(name=name, mac=h["mac"], ip=h["ip"], port=ports[name]))
        commands[name] = list(h.get("commands", []))
    if len(hosts) < 2:
        raise DemoError(f"{path}: need at least two hosts")
    runtime = sw.get("runtime_json")
    if not runtime:
        raise DemoError(f"{path}: switch {sw_name} has no runtime_json")
    return TopoSpec(hosts, commands, sw_name, topo_dir / runtime)


# --------------------------------------------------------------------------- toolchains


@dataclass
class Toolchain:
    """How to compile and how to start the switch, for softnic or for the real p4c/BMv2."""

    name: str
    compile_cmd: list[str]
    run_cmd: list[str]

    def compile_argv(self, src: Path, bmv2_json: Path, p4info: Path) -> list[str]:
        return [*self.compile_cmd, "-o", str(bmv2_json), "--p4runtime-files", str(p4info),
                str(src)]

    def run_argv(self, iface_args: list[str], grpc_addr: str) -> list[str]:
        # BMv2 also opens a Thrift server (default port 9090): give it a free port so two runs
        # do not collide. softnic has no Thrift server and needs none.
        thrift = ["--thrift-port", str(free_tcp_port())] if self.name == "bmv2" else []
        # Always an explicit (loopback) address: simple_switch_grpc would otherwise listen on
        # 0.0.0.0:9559. The switch runs in the root namespace, so 127.0.0.1 reaches it.
        return [*self.run_cmd, "--no-p4", *iface_args, *thrift, "--",
                "--grpc-server-addr", grpc_addr]


def softnic_toolchain() -> Toolchain:
    cli = [sys.executable, "-m", "softnic.cli"]
    return Toolchain("softnic", [*cli, "compile"], [*cli, "run"])


BMV2_TOOLS = ("p4c-bm2-ss", "simple_switch_grpc")


def bmv2_toolchain() -> Toolchain | None:
    """The real tools when both are on PATH, else None."""
    if any(shutil.which(t) is None for t in BMV2_TOOLS):
        return None
    return Toolchain("bmv2", ["p4c-bm2-ss", "--arch", "v1model", "--std", "p4-16"],
                     ["simple_switch_grpc"])


# --------------------------------------------------------------------------- output


class Ui:
    """Progress on stderr while setting up (a spinner when on a terminal), results on stdout."""

    def __init__(self, verbose: bool) -> None:
        self.verbose = verbose
        self.err = Console(stderr=True, highlight=False)
        self.out = Console(highlight=False)
        self._status: Any = None

    @contextmanager
    def step(self, text: str) -> Iterator[None]:
        t0 = time.monotonic()
        with self.err.status(text) as status:
            self._status = status
            try:
                yield
            except BaseException:
                self.err.print(f"[red]x[/red] {text}")
                raise
            finally:
                self._status = None
        self.err.print(f"[green]ok[/green] {text} [dim]({time.monotonic() - t0:.1f} s)[/dim]")

    def detail(self, text: str) -> None:
        if self.verbose:
            self.err.print(f"   {text}", style="dim", markup=False)


def _show_cmd(argv: list[str]) -> str:
    """A command as the user would type it (``softnic`` rather than ``python -m softnic.cli``)."""
    if argv[:3] == [sys.executable, "-m", "softnic.cli"]:
        argv = ["softnic", *argv[3:]]
    return " ".join(argv)


# --------------------------------------------------------------------------- steps


def compile_program(tc: Toolchain, src: Path, build: Path, ui: Ui) -> tuple[Path, Path]:
    build.mkdir(parents=True, exist_ok=True)
    bmv2_json, p4info = build / f"{src.stem}.json", build / f"{src.stem}.p4info.txt"
    argv = tc.compile_argv(src, bmv2_json, p4info)
    ui.detail(_show_cmd(argv))
    res = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if res.returncode != 0:
        raise DemoError(f"{tc.name} compile failed (exit {res.returncode}):\n{res.stderr.strip()}")
    return bmv2_json, p4info


def setup_hosts(topo: Topology, spec: TopoSpec, ui: Ui) -> None:
    """Run each host's ``commands`` from topology.json inside its namespace."""
    for h in topo.hosts:
        for cmd in spec.commands[h.name]:
            ui.detail(f"{h.name}: {cmd}")
            res = h.run(["sh", "-c", cmd])
            if res.returncode != 0:
                raise DemoError(f"{h.name}: `{cmd}` failed: {res.stderr.strip()}")


def free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class SwitchProcess:
    """The switch (``softnic run`` or ``simple_switch_grpc``), output going to a log file."""

    def __init__(self, argv: list[str], log_path: Path, grpc_port: int) -> None:
        self.log_path = log_path
        self.grpc_port = grpc_port
        self._log = open(log_path, "w")  # closed in stop()
        # Own session: a Ctrl-C in the terminal reaches only us, and we stop the switch after
        # the controller has disconnected.
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Wait until the gRPC port accepts connections (works for both targets)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise DemoError(f"switch exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.grpc_port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        raise DemoError(f"switch did not open its P4Runtime port in {timeout:.0f} s")

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text().splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode


# --------------------------------------------------------------------------- controller


def _p4info_match_types(p4info_path: Path) -> dict[str, dict[str, int]]:
    """table name -> match field name -> P4Info MatchType, to render tutorials' match values."""
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2

    info = text_format.Parse(p4info_path.read_text(), p4info_pb2.P4Info())
    out: dict[str, dict[str, int]] = {}
    for t in info.tables:
        fields = {m.name: m.match_type for m in t.match_fields}
        out[t.preamble.name] = fields
        if t.preamble.alias:
            out.setdefault(t.preamble.alias, fields)
    return out


def render_match(value: Any, match_type: int) -> str:
    """A tutorials runtime-JSON match value as p4runtime-shell's string syntax."""
    from p4.config.v1 import p4info_pb2

    mf = p4info_pb2.MatchField
    pair = isinstance(value, list) and len(value) == 2
    if match_type == mf.LPM and pair:
        return f"{value[0]}/{value[1]}"
    if match_type == mf.TERNARY and pair:
        return f"{value[0]}&&&{value[1]}"
    if match_type == mf.RANGE and pair:
        return f"{value[0]}..{value[1]}"
    if match_type in (mf.EXACT, mf.OPTIONAL) and not isinstance(value, list):
        return str(value)
    raise DemoError(f"match value {value!r} does not fit match type "
                    f"{mf.MatchType.Name(match_type)}")


RUNTIME_KEYS = {"target", "p4info", "bmv2_json", "table_entries", "multicast_group_entries"}


class Controller:
    """The P4Runtime client: p4runtime-shell, used as a library (primary, election id 1)."""

    def __init__(self, grpc_addr: str, bmv2_json: Path, p4info: Path) -> None:
        from p4runtime_sh import shell as sh

        self.sh = sh
        self.p4info = p4info
        try:
            sh.setup(device_id=0, grpc_addr=grpc_addr, election_id=(0, 1),
                     config=sh.FwdPipeConfig(str(p4info), str(bmv2_json)), verbose=False)
        except SystemExit:  # p4runtime-shell exits on a rejected pipeline; it logged why
            raise DemoError("the switch rejected the pipeline (SetForwardingPipelineConfig)") \
                from None

    def close(self) -> None:
        self.sh.teardown()

    def install(self, runtime: dict[str, Any], ui: Ui) -> int:
        """Install a tutorials ``sN-runtime.json``; returns the number of entities written."""
        unknown = set(runtime) - RUNTIME_KEYS
        if unknown:
            raise DemoError(f"runtime JSON: unsupported keys {sorted(unknown)}")
        match_types = _p4info_match_types(self.p4info)
        n = 0
        for e in runtime.get("table_entries", []):
            self._table_entry(e, match_types)
            ui.detail(f"table {e['table']}: {e.get('match', 'default')} -> {e['action_name']}"
                      f"({e.get('action_params', {})})")
            n += 1
        for g in runtime.get("multicast_group_entries", []):
            mcg = self.sh.MulticastGroupEntry(int(g["multicast_group_id"]))
            for r in g.get("replicas", []):
                mcg.add(int(r["egress_port"]), int(r.get("instance", 0)))
            mcg.insert()
            n += 1
        return n

    def _table_entry(self, e: dict[str, Any], match_types: dict[str, dict[str, int]]) -> None:
        from p4runtime_sh.p4runtime import P4RuntimeWriteException

        table = e["table"]
        if table not in match_types:
            raise DemoError(f"runtime JSON: no table {table} in the P4Info")
        default = bool(e.get("default_action", False))
        te = self.sh.TableEntry(table)(action=e["action_name"], is_default=default)
        for name, value in e.get("match", {}).items():
            if name not in match_types[table]:
                raise DemoError(f"runtime JSON: table {table} has no match field {name}")
            te.match[name] = render_match(value, match_types[table][name])
        for name, value in e.get("action_params", {}).items():
            te.action[name] = str(value)
        if "priority" in e:
            te.priority = int(e["priority"])
        try:
            te.modify() if default else te.insert()
        except P4RuntimeWriteException as exc:
            raise DemoError(f"writing {table} entry {e} failed: {exc}") from None

    def read_counters(self) -> list[CounterCell]:
        """Every non-zero cell of every indirect counter of the program."""
        from google.protobuf import text_format
        from p4.config.v1 import p4info_pb2

        info = text_format.Parse(self.p4info.read_text(), p4info_pb2.P4Info())
        cells = []
        for c in info.counters:
            for entry in self.sh.CounterEntry(c.preamble.name).read():
                msg = entry.msg()
                if msg.data.packet_count or msg.data.byte_count:
                    cells.append(CounterCell(c.preamble.name, msg.index.index,
                                             msg.data.packet_count, msg.data.byte_count))
        return sorted(cells, key=lambda x: (x.counter, x.index))


@dataclass
class CounterCell:
    counter: str
    index: int
    packets: int
    bytes: int


# --------------------------------------------------------------------------- traffic


@dataclass
class Exchange:
    """One measured exchange between two hosts."""

    kind: str
    src: str
    dst: str
    sent: int
    received: int
    rtts_ms: list[float] = field(default_factory=list)

    @property
    def median_ms(self) -> float | None:
        return statistics.median(self.rtts_ms) if self.rtts_ms else None


_PING_SENT = re.compile(r"(\d+) packets transmitted, (\d+) received")
_PING_TIME = re.compile(r"time=([\d.]+) ms")


def ping(topo: Topology, src: str, dst: str, count: int, ui: Ui) -> Exchange:
    dst_ip = topo.host(dst).ip
    argv = ["ping", "-n", "-c", str(count), "-i", "0.2", "-W", "2", dst_ip]
    ui.detail(f"{src}: {' '.join(argv)}")
    res = topo.host(src).run(argv, timeout=30)
    m = _PING_SENT.search(res.stdout)
    sent, received = (int(m.group(1)), int(m.group(2))) if m else (count, 0)
    rtts = [float(t) for t in _PING_TIME.findall(res.stdout)]
    return Exchange("ping", src, dst, sent, received, rtts)


_UDP_SERVER = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
s.settimeout(3.0)
print("ready", flush=True)
n = 0
while True:
    try:
        data, peer = s.recvfrom(2048)
    except socket.timeout:
        break
    s.sendto(data, peer)
    n += 1
print(n, flush=True)
"""

_UDP_CLIENT = """
import json, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(1.0)
dst, count = (sys.argv[1], int(sys.argv[2])), int(sys.argv[3])
rtts = []
for i in range(count):
    msg = b"softnic-demo %d" % i
    t0 = time.perf_counter()
    s.sendto(msg, dst)
    try:
        while s.recvfrom(2048)[0] != msg:
            pass
    except socket.timeout:
        continue
    rtts.append((time.perf_counter() - t0) * 1000)
print(json.dumps(rtts))
"""


def udp_exchange(topo: Topology, src: str, dst: str, count: int, ui: Ui) -> Exchange:
    """``src`` sends numbered datagrams to an echo server on ``dst`` and times each echo."""
    server_host, client_host = topo.host(dst), topo.host(src)
    ui.detail(f"{dst}: UDP echo server on {server_host.ip}:{UDP_PORT}; "
              f"{src}: {count} datagrams")
    server = server_host.popen([sys.executable, "-c", _UDP_SERVER, server_host.ip, str(UDP_PORT)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        if server.stdout.readline().strip() != "ready":
            raise DemoError(f"UDP echo server on {dst} did not start")
        res = client_host.run([sys.executable, "-c", _UDP_CLIENT, server_host.ip, str(UDP_PORT),
                               str(count)], timeout=count * 2 + 10)
        if res.returncode != 0:
            raise DemoError(f"UDP client on {src} failed: {res.stderr.strip()}")
        rtts = json.loads(res.stdout)
    finally:
        server.kill()
        server.communicate()
    return Exchange("udp echo", src, dst, count, len(rtts), rtts)


# --------------------------------------------------------------------------- report


def report(ui: Ui, tc: Toolchain, exchanges: list[Exchange], cells: list[CounterCell],
           topo: Topology, spec: TopoSpec, n_entities: int) -> bool:
    """Print the result tables; returns True when every pair got replies."""
    t = Table(title=f"Traffic through {spec.switch} ({tc.name})")
    for col in ("pair", "kind", "sent", "received", "median RTT"):
        t.add_column(col, justify="left" if col in ("pair", "kind") else "right")
    for x in exchanges:
        med = f"{x.median_ms:.2f} ms" if x.median_ms is not None else "-"
        style = None if x.received == x.sent else ("yellow" if x.received else "red")
        t.add_row(f"{x.src} -> {x.dst}", x.kind, str(x.sent), str(x.received), med, style=style)
    ui.out.print(t)

    port_host = {h.port: h.name for h in topo.hosts}
    c = Table(title="Switch counters read over P4Runtime (non-zero cells)")
    for col in ("counter", "index (port)", "host on port", "packets", "bytes"):
        c.add_column(col, justify="right" if col in ("packets", "bytes") else "left")
    for cell in cells:
        c.add_row(cell.counter, str(cell.index), port_host.get(cell.index, "-"),
                  str(cell.packets), str(cell.bytes))
    if cells:
        ui.out.print(c)
    else:
        ui.out.print("The program has no counters, or they stayed at zero.")

    pings = [x for x in exchanges if x.kind == "ping"]
    ok = all(x.received > 0 for x in exchanges)
    lost = sum(x.sent - x.received for x in exchanges)
    ui.out.print("\nWhat this shows:")
    ui.out.print(f"  - {tc.name} compiled the P4 program and ran it as the switch; the controller "
                 f"(this process) pushed the pipeline and {n_entities} entries from "
                 f"{spec.runtime_json.name} over P4Runtime, by name.")
    ui.out.print("  - Real kernel traffic (ICMP echo, UDP) between network namespaces crossed the "
                 "switch, forwarded only by the installed entries (the default action drops).")
    crossed = sum(x.sent + x.received for x in exchanges)  # requests plus their replies
    for name in sorted({x.counter for x in cells}):
        total = sum(x.packets for x in cells if x.counter == name)
        ui.out.print(f"  - Counter {name}, read back over P4Runtime, counted {total} packets; "
                     f"the hosts' own counts account for {crossed} (requests + replies).")
    if ok:
        ui.out.print(f"Result: all {len(pings)} host pairs reachable "
                     f"({lost} of {sum(x.sent for x in exchanges)} requests unanswered).")
    else:
        bad = [f"{x.src}->{x.dst} ({x.kind})" for x in exchanges if x.received == 0]
        ui.out.print(f"[red]Result: traffic did not pass: {', '.join(bad)}[/red]")
    ui.out.print("Not built yet: the memcached cache itself (P4 program, controller, host agent "
                 "and topology: steps 3-5 of 5). This demo only shows the softnic toolchain.")
    return ok


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="softnic-demo",
        description="Compile and run a small L3 P4 program on softnic (or BMv2) between network "
                    "namespaces, drive it over P4Runtime, and show the traffic that crossed it.")
    p.add_argument("--target", choices=("softnic", "bmv2"), default="softnic",
                   help="softnic (default), or bmv2 when p4c-bm2-ss and simple_switch_grpc are "
                        "on PATH")
    p.add_argument("--topo", type=Path, default=DEFAULT_TOPO, metavar="PATH",
                   help="exercise folder with basic.p4, topology.json and the switch runtime "
                        f"JSON (default {DEFAULT_TOPO.relative_to(REPO_ROOT)})")
    p.add_argument("--build-dir", type=Path, default=None, metavar="DIR",
                   help="where compiled output and the switch log go (default build/<topo name>)")
    p.add_argument("--ping-count", type=int, default=PING_COUNT, metavar="N",
                   help=f"echo requests per ordered host pair (default {PING_COUNT})")
    p.add_argument("--udp-count", type=int, default=UDP_COUNT, metavar="N",
                   help=f"datagrams in the UDP echo exchange (default {UDP_COUNT})")
    p.add_argument("-v", "--verbose", action="store_true", help="show commands and entries")
    args = p.parse_args(argv)
    if args.ping_count < 1 or args.udp_count < 1:
        p.error("--ping-count and --udp-count must be at least 1")
    return args


def _terminate_on_sigterm() -> None:
    """Make SIGTERM unwind like Ctrl-C, so the ``finally`` blocks tear everything down."""
    def handler(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, handler)


def run(args: argparse.Namespace, ui: Ui) -> int:
    if args.target == "bmv2":
        tc = bmv2_toolchain()
        if tc is None:
            missing = [t for t in BMV2_TOOLS if shutil.which(t) is None]
            ui.out.print(f"[yellow]--target bmv2: {', '.join(missing)} not found on PATH "
                         "(BMv2/p4c are not installed here).[/yellow]")
            ui.out.print("Skipped: compiling with p4c-bm2-ss, running simple_switch_grpc, all "
                         "traffic. Nothing was tested; run with --target softnic instead.")
            return EXIT_SKIPPED
    else:
        tc = softnic_toolchain()
    reason = netns_unavailable_reason()
    if reason is not None:
        raise DemoError(f"cannot build the topology: {reason}")

    topo_dir = args.topo.resolve()
    spec = load_topology(topo_dir)
    try:
        runtime = json.loads(spec.runtime_json.read_text())
    except (OSError, ValueError) as exc:
        raise DemoError(f"cannot read {spec.runtime_json}: {exc}") from None
    build = args.build_dir or Path("build") / topo_dir.name
    src = topo_dir / "basic.p4"

    with ui.step(f"compile {src.name} with {tc.name} into {build}/"):
        bmv2_json, p4info = compile_program(tc, src, build, ui)

    with ExitStack() as stack:
        with ui.step(f"create {len(spec.hosts)} host namespaces wired to {spec.switch}"):
            topo = stack.enter_context(Topology(spec.hosts, switch_in_root=True))
            setup_hosts(topo, spec, ui)
            for h in topo.hosts:
                ui.detail(f"{h.name}: {h.ip} {h.mac} in netns {h.ns}, "
                          f"{spec.switch} port {h.port} = {h.switch_ifname}")
        return _run_switch(tc, topo, spec, runtime, bmv2_json, p4info, build, args, ui)


def _run_switch(tc: Toolchain, topo: Topology, spec: TopoSpec, runtime: dict[str, Any],
                bmv2_json: Path, p4info: Path, build: Path, args: argparse.Namespace,
                ui: Ui) -> int:
    grpc_port = free_tcp_port()
    argv = tc.run_argv(topo.interface_args(), f"127.0.0.1:{grpc_port}")
    switch: SwitchProcess | None = None
    controller: Controller | None = None
    try:
        with ui.step(f"start {tc.name} switch {spec.switch} (P4Runtime on 127.0.0.1:{grpc_port})"):
            ui.detail(_show_cmd(argv))
            switch = SwitchProcess(argv, build / f"{spec.switch}.log", grpc_port)
            switch.wait_ready()
        with ui.step(f"push pipeline and install {spec.runtime_json.name} over P4Runtime"):
            controller = Controller(f"127.0.0.1:{grpc_port}", bmv2_json, p4info)
            n_entities = controller.install(runtime, ui)
        names = [h.name for h in topo.hosts]
        exchanges: list[Exchange] = []
        pairs = [(a, b) for a in names for b in names if a != b]
        with ui.step(f"ping {len(pairs)} host pairs, {args.ping_count} times each"):
            for a, b in pairs:
                exchanges.append(ping(topo, a, b, args.ping_count, ui))
        with ui.step(f"UDP echo {names[0]} -> {names[-1]}, {args.udp_count} datagrams"):
            exchanges.append(udp_exchange(topo, names[0], names[-1], args.udp_count, ui))
        with ui.step("read counters over P4Runtime"):
            cells = controller.read_counters()
        ok = report(ui, tc, exchanges, cells, topo, spec, n_entities)
        return 0 if ok else 1
    finally:
        if controller is not None:
            controller.close()
        if switch is not None:
            rc = switch.stop()
            ui.detail(f"switch stopped (exit {rc}); log in {switch.log_path}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    ui = Ui(args.verbose)
    _terminate_on_sigterm()
    try:
        return run(args, ui)
    except DemoError as exc:
        ui.err.print("softnic-demo: error:", style="red", end=" ")
        ui.err.print(str(exc), markup=False)
        return 1
    except KeyboardInterrupt:
        ui.err.print("softnic-demo: interrupted; everything it started has been stopped")
        return 130


if __name__ == "__main__":
    sys.exit(main())
