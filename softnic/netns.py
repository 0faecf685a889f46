"""Network namespaces and veth pairs through iproute2 (root / CAP_NET_ADMIN): the one library.

Two layers, both used across the project (softnic's tests and benchmarks, p4cache's lab, its
Mininet topologies and ``p4cache up``/``down``):

* primitives: :func:`run` a command in a namespace, create and delete namespaces and veth pairs,
  :func:`quiet_interface`, a file lock, a free /24, and crash cleanup by name: every name a
  user creates starts with its prefix and the creating pid, so :func:`remove_stale` finds what a
  killed run left behind (namespaces, root links, and the processes it recorded with
  :func:`record_process`);
* :class:`Topology`: hosts in their own namespaces, each wired by a veth pair to a switch port
  in the root namespace (where ``softnic run`` attaches, as Mininet runs its switches, so its
  P4Runtime server is on 127.0.0.1). Host ``i`` (1-based, or the port its :class:`HostSpec`
  names) gets ``eth0``; addressing follows p4lang/tutorials' basic exercise (:func:`routed_host`).

Every interface is quiet: IPv6 off (router solicitations and DAD frames would show up in the
switch and break exact packet counts) and checksum/segmentation offloads off (with them, a host
hands the veth packets with partial checksums or as 64 KiB GSO frames, which a software switch
would forward broken). A :class:`Topology` is removed on ``__exit__``, at interpreter exit, or by
the next run (:func:`remove_stale`, prefix ``snt``).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path


class NetnsError(RuntimeError):
    pass


# ---- availability ------------------------------------------------------------------------------

def netns_unavailable_reason() -> str | None:
    """Why namespaces cannot be created here, or None when they can."""
    if os.geteuid() != 0:
        return "network namespace tests need root (CAP_NET_ADMIN)"
    if shutil.which("ip") is None:
        return "the `ip` command (Debian package iproute2) is not installed"
    if shutil.which("ethtool") is None:
        return "`ethtool` (Debian package ethtool) is needed to turn veth offloads off"
    return None


def require_netns() -> None:
    """pytest.skip with a clear reason when namespaces cannot be created."""
    reason = netns_unavailable_reason()
    if reason is not None:
        import pytest

        pytest.skip(reason)


# ---- primitives --------------------------------------------------------------------------------

def exec_prefix(ns: str | None) -> list[str]:
    """The argv prefix that runs a command in ``ns`` (None: the root namespace)."""
    return ["ip", "netns", "exec", ns] if ns else []


def run(argv: Sequence[str], ns: str | None = None, check: bool = True,
        input: str | None = None, timeout: float = 30.0) -> str:
    """Run a command (inside ``ns`` when given) and return its stdout; NetnsError on failure
    when ``check``."""
    full = [*exec_prefix(ns), *argv]
    res = subprocess.run(full, capture_output=True, text=True, check=False, input=input,
                         timeout=timeout)
    if check and res.returncode != 0:
        raise NetnsError(f"{' '.join(full)} failed ({res.returncode}): {res.stderr.strip()}")
    return res.stdout


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive flock on ``path`` (created with its folder), released on exit or when the
    holder dies."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def free_octet(base: str) -> int:
    """The lowest x in 1..254 such that no interface of the root namespace has an address in
    ``base``.x.0/24 (call under a lock and assign before releasing it)."""
    used = set(re.findall(re.escape(base) + r"\.(\d+)\.\d+/", run(["ip", "-4", "-o", "addr"],
                                                                     check=False)))
    for x in range(1, 255):
        if str(x) not in used:
            return x
    raise NetnsError(f"no free /24 left in {base}.0.0/16")


def add_namespace(name: str) -> None:
    """A namespace with loopback up and IPv6 off."""
    run(["ip", "netns", "add", name])
    for conf in ("all", "default"):
        run(["sysctl", "-qw", f"net.ipv6.conf.{conf}.disable_ipv6=1"], ns=name, check=False)
    run(["ip", "link", "set", "lo", "up"], ns=name)


def delete_namespace(name: str) -> None:
    """Kill whatever still runs in the namespace, then delete it (its veths go with it)."""
    for pid in run(["ip", "netns", "pids", name], check=False).split():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)
    run(["ip", "netns", "delete", name], check=False)


def namespaces() -> list[str]:
    out = run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def quiet_interface(ifname: str, ns: str | None = None) -> None:
    """No IPv6 chatter and no checksum offload: frames leave a veth complete, as on a wire."""
    run(["sysctl", "-qw", f"net.ipv6.conf.{ifname}.disable_ipv6=1"], ns=ns, check=False)
    run(["ethtool", "-K", ifname, "tx", "off", "rx", "off", "sg", "off", "tso", "off",
         "gso", "off", "gro", "off"], ns=ns, check=False)


def add_veth(outside: str, inside: str, ns: str | None, inside_name: str) -> None:
    """A quiet veth pair, both ends up: ``outside`` stays in the root namespace, ``inside``
    moves into ``ns`` and is renamed ``inside_name`` there."""
    run(["ip", "link", "add", outside, "type", "veth", "peer", "name", inside])
    if ns:
        run(["ip", "link", "set", inside, "netns", ns])
        run(["ip", "link", "set", inside, "name", inside_name], ns=ns)
    for ifname, where in ((outside, None), (inside_name if ns else inside, ns)):
        quiet_interface(ifname, where)
        run(["ip", "link", "set", ifname, "up"], ns=where)


def delete_link(name: str) -> None:
    run(["ip", "link", "delete", name], check=False)


# ---- what a run owns, and what a dead run left behind ------------------------------------------

def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def record_process(run_dir: Path, tag: str, pid: int, argv0: str) -> None:
    """Remember a process started for ``tag`` (in its own session), for :func:`kill_recorded`."""
    run_dir.mkdir(parents=True, exist_ok=True)
    with open(run_dir / f"{tag}.pids", "a") as fh:
        fh.write(f"{pid} {Path(argv0).name}\n")


def _cmd_name(pid: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return ""
    return " ".join(Path(a.decode(errors="replace")).name for a in argv if a)


def kill_recorded(run_dir: Path, tag: str) -> list[int]:
    """Kill the process groups recorded for ``tag`` (each only if its pid still runs the
    recorded program) and forget them."""
    path = run_dir / f"{tag}.pids"
    killed = []
    if path.exists():
        for line in path.read_text().splitlines():
            pid_s, _, name = line.partition(" ")
            pid = int(pid_s)
            if name and name in _cmd_name(pid).split():
                try:
                    os.killpg(pid, signal.SIGKILL)
                    killed.append(pid)
                except (ProcessLookupError, PermissionError):
                    pass
        path.unlink(missing_ok=True)
    return killed


def remove_stale(prefix: str, run_dir: Path | None = None) -> list[str]:
    """Delete what runs named ``<prefix><pid>...`` left when their process ``pid`` is gone: the
    processes recorded in ``run_dir``, namespaces and root-namespace links."""
    owned = re.compile(rf"^{re.escape(prefix)}(\d+)")

    def dead(name: str) -> bool:
        m = owned.match(name)
        return m is not None and not pid_alive(int(m.group(1)))

    removed = []
    if run_dir is not None and run_dir.exists():
        for f in run_dir.glob(f"{prefix}*.pids"):
            if dead(f.stem):
                removed += [f"pid {p}" for p in kill_recorded(run_dir, f.stem)]
    for ns in namespaces():
        if dead(ns):
            delete_namespace(ns)
            removed.append(ns)
    for name in _link_names():
        if dead(name):
            delete_link(name)
            removed.append(name)
    # A deleted namespace takes its veths' root ends with it, but the kernel does that
    # asynchronously: wait (briefly) until they are gone, so the caller sees a clean machine.
    deadline = time.monotonic() + 5.0
    while any(dead(n) for n in _link_names()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return removed


def _link_names() -> list[str]:
    return [line.split(":")[1].strip().split("@")[0]
            for line in run(["ip", "-o", "link", "show"], check=False).splitlines()
            if line.count(":") >= 2]


# ---- Topology: hosts wired to switch ports, for tests and benchmarks ---------------------------

NS_PREFIX = "snt"
_counter = itertools.count(1)
_live: set[Topology] = set()


@dataclass
class HostSpec:
    name: str
    mac: str
    ip: str  # with prefix length, e.g. "10.0.1.1/24"
    gw_ip: str | None = None  # default route via this address...
    gw_mac: str | None = None  # ...pinned with a static ARP entry
    neighbors: dict[str, str] = field(default_factory=dict)  # extra static ARP: ip -> mac
    port: int | None = None  # switch port to wire to; None: the host's 1-based position


def routed_host(i: int) -> HostSpec:
    """Host i as in p4lang/tutorials basic: 10.0.i.i/24, MAC 08:00:00:00:0i:ii, gateway .10."""
    return HostSpec(
        name=f"h{i}",
        mac=f"08:00:00:00:{i:02x}:{i * 0x11 & 0xFF:02x}",
        ip=f"10.0.{i}.{i}/24",
        gw_ip=f"10.0.{i}.10",
        gw_mac=f"08:00:00:00:{i:02x}:00",
    )


@dataclass
class Host:
    spec: HostSpec
    ns: str
    ifname: str
    port: int  # the switch port this host is wired to
    switch_ifname: str

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def ip(self) -> str:
        return self.spec.ip.split("/")[0]

    @property
    def mac(self) -> str:
        return self.spec.mac

    def cmd(self, argv: Sequence[str]) -> list[str]:
        return [*exec_prefix(self.ns), *argv]

    def run(self, argv: Sequence[str], **kw: object) -> subprocess.CompletedProcess:
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        kw.setdefault("timeout", 30)
        return subprocess.run(self.cmd(argv), **kw)  # type: ignore[call-overload]

    def popen(self, argv: Sequence[str], **kw: object) -> subprocess.Popen:
        return subprocess.Popen(self.cmd(argv), **kw)  # type: ignore[call-overload]

    def send_frames(self, frames: Sequence[bytes], gap: float = 0.0) -> None:
        """Send raw Ethernet frames out of the host interface (AF_PACKET, from the namespace)."""
        res = self.run([sys.executable, "-c", _SEND_SCRIPT, self.ifname, str(gap)],
                       input=json.dumps([f.hex() for f in frames]))
        if res.returncode != 0:
            raise RuntimeError(f"send_frames in {self.ns} failed: {res.stderr.strip()}")

    def capture(self, ethertype: int | None = None, timeout: float = 3.0,
                count: int = 0) -> Capture:
        """Start capturing frames arriving on the host interface; returns once the socket is open.

        Only incoming frames are kept (not the host's own), optionally only one EtherType. The
        capture ends after ``count`` frames (0: no limit) or ``timeout`` seconds of silence.
        """
        proc = self.popen([sys.executable, "-c", _CAPTURE_SCRIPT, self.ifname,
                           str(ethertype if ethertype is not None else -1), str(timeout),
                           str(count)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if line.strip() != "ready":
            proc.kill()
            raise RuntimeError(f"capture in {self.ns} did not start: {proc.stderr.read()}")
        return Capture(proc)


class Capture:
    """A running capture; :meth:`frames` waits for it to end and returns what arrived."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc

    def frames(self, timeout: float = 60.0) -> list[bytes]:
        out, err = self.proc.communicate(timeout=timeout)
        if self.proc.returncode != 0:
            raise RuntimeError(f"capture failed: {err.strip()}")
        return [bytes.fromhex(h) for h in json.loads(out)]


_SEND_SCRIPT = """
import json, socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
gap = float(sys.argv[2])
for h in json.load(sys.stdin):
    s.send(bytes.fromhex(h))
    if gap:
        time.sleep(gap)
"""

_CAPTURE_SCRIPT = """
import json, socket, sys, time
ifname, ethertype = sys.argv[1], int(sys.argv[2])
timeout, count = float(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((ifname, 3))
s.settimeout(timeout)
print("ready", flush=True)
got = []
while not count or len(got) < count:
    try:
        data, addr = s.recvfrom(65600)
    except socket.timeout:
        break
    if addr[2] == 4:  # PACKET_OUTGOING: the host's own transmission
        continue
    if ethertype >= 0 and int.from_bytes(data[12:14], "big") != ethertype:
        continue
    got.append(data.hex())
print(json.dumps(got))
"""


class Topology:
    """Hosts in their own namespaces, each wired by a veth pair to a switch-side interface in
    the root namespace (``switch_ifname``: a per-run tag plus ``p<port>``)."""

    def __init__(self, hosts: Sequence[HostSpec] | int = 2) -> None:
        specs = [routed_host(i) for i in range(1, hosts + 1)] if isinstance(hosts, int) else hosts
        self.tag = f"{NS_PREFIX}{os.getpid()}x{next(_counter)}"
        self.hosts: list[Host] = []
        for i, spec in enumerate(specs, start=1):
            port = spec.port if spec.port is not None else i
            if any(h.port == port for h in self.hosts):
                raise ValueError(f"switch port {port} is given to two hosts")
            self.hosts.append(Host(spec, f"{self.tag}{spec.name}", "eth0", port,
                                   f"{self.tag[-9:]}p{port}"))
        self._created: list[str] = []

    # -- lifecycle
    def __enter__(self) -> Topology:
        require_netns()
        remove_stale(NS_PREFIX)
        _live.add(self)
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for ns in reversed(self._created):
            delete_namespace(ns)
        for h in self.hosts:  # normally gone with the host namespace already
            delete_link(h.switch_ifname)
        self._created.clear()
        _live.discard(self)

    def _build(self) -> None:
        for h in self.hosts:
            add_namespace(h.ns)
            self._created.append(h.ns)
            add_veth(h.switch_ifname, f"{self.tag[-9:]}q{h.port}", h.ns, h.ifname)
            s = h.spec
            lines = [f"link set {h.ifname} address {s.mac}", f"addr add {s.ip} dev {h.ifname}"]
            if s.gw_ip:
                lines.append(f"route add default via {s.gw_ip} dev {h.ifname}")
                if s.gw_mac:
                    lines.append(
                        f"neigh replace {s.gw_ip} lladdr {s.gw_mac} dev {h.ifname} nud permanent")
            for ip, mac in s.neighbors.items():
                lines.append(f"neigh replace {ip} lladdr {mac} dev {h.ifname} nud permanent")
            run(["ip", "-batch", "-"], ns=h.ns, input="\n".join(lines) + "\n")
        for h in self.hosts:
            _wait_up(h)

    # -- helpers
    def host(self, name: str) -> Host:
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(name)

    def interface_args(self) -> list[str]:
        """``-i 1@<if> -i 2@<if> ...`` for ``softnic run`` / ``simple_switch_grpc``."""
        out: list[str] = []
        for h in self.hosts:
            out += ["-i", f"{h.port}@{h.switch_ifname}"]
        return out


def _wait_up(h: Host, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        res = h.run(["ip", "-br", "link", "show", h.ifname])
        if "LOWER_UP" in res.stdout or " UP " in res.stdout:
            return
        time.sleep(0.05)
    raise RuntimeError(f"{h.ns}/{h.ifname} did not come up")


@atexit.register
def _cleanup_at_exit() -> None:
    for topo in list(_live):
        topo.close()
