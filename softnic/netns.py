"""Network-namespace topologies for tests and benchmarks: hosts wired to a switch by veth pairs.

A :class:`Topology` creates one namespace per host and, by default, one namespace for the switch
(so the switch's interfaces can have fixed names such as ``veth1`` without clashing with anything
on the machine). Host ``i`` (1-based, or the port its :class:`HostSpec` names) gets interface
``eth0`` whose peer is ``veth<i>`` on the switch side; the switch binds that as port ``i``.

Routed addressing follows p4lang/tutorials' basic exercise so programs written for it work
unchanged: host i is 10.0.i.i/24 (see :func:`routed_host`) with a default route via a
gateway whose MAC is pinned with a static ARP entry, so no ARP is needed through the P4 switch.

Why the extra knobs:

* IPv6 is disabled in every namespace: otherwise router solicitations and DAD frames show up in
  the switch and break exact packet counts.
* Checksum and segmentation offloads are turned off on the host interfaces (with ``ethtool``, as
  the tutorials do): with them on, a host hands the veth UDP/TCP packets with a partial checksum
  or as 64 KiB GSO frames, which a software switch would forward broken.

Cleanup is guaranteed: ``__exit__`` kills every process still running in our namespaces and
deletes them (which deletes their veths); an ``atexit`` hook covers interpreter exits; and
namespaces left by a crashed earlier run (their creator pid is gone) are removed at start.
Namespace names embed the creating pid plus a counter, so parallel runs never collide.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

NS_PREFIX = "snt"
_counter = itertools.count(1)
_live: set[Topology] = set()


def netns_unavailable_reason() -> str | None:
    """Why namespace tests cannot run here, or None when they can."""
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
        return ["ip", "netns", "exec", self.ns, *argv]

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


def _ip_batch(ns: str | None, lines: list[str]) -> None:
    argv = ["ip"] + (["-n", ns] if ns else []) + ["-batch", "-"]
    res = subprocess.run(argv, input="\n".join(lines) + "\n", capture_output=True, text=True,
                         timeout=30)
    if res.returncode != 0:
        raise RuntimeError(f"ip -batch in {ns or 'root'} failed: {res.stderr.strip()}")


def _ns_shell(ns: str, script: str) -> None:
    res = subprocess.run(["ip", "netns", "exec", ns, "sh", "-c", script], capture_output=True,
                         text=True, timeout=30)
    if res.returncode != 0:
        raise RuntimeError(f"in netns {ns}: {script!r} failed: {res.stderr.strip()}")


_SYSCTL = (
    "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; "
    "echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6"
)


def _existing_namespaces() -> list[str]:
    res = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10)
    return [line.split()[0] for line in res.stdout.splitlines() if line.strip()]


def _delete_namespace(ns: str) -> None:
    res = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=10)
    for pid in res.stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)


def remove_stale_namespaces() -> list[str]:
    """Delete namespaces this module created in processes that no longer exist."""
    removed = []
    for ns in _existing_namespaces():
        if not ns.startswith(NS_PREFIX):
            continue
        pid_part = ns[len(NS_PREFIX):].split("x", 1)[0]
        if not pid_part.isdigit():
            continue
        if not os.path.exists(f"/proc/{pid_part}"):
            _delete_namespace(ns)
            removed.append(ns)
    return removed


class Topology:
    """Hosts in their own namespaces, each wired by a veth pair to the switch side.

    ``switch_in_root=True`` puts the switch ends in the root namespace (names then carry the
    unique prefix); otherwise they live in :attr:`switch_ns` as ``veth1``, ``veth2``, ...
    """

    def __init__(self, hosts: Sequence[HostSpec] | int = 2, *, switch_in_root: bool = False,
                 offloads_off: bool = True) -> None:
        specs = [routed_host(i) for i in range(1, hosts + 1)] if isinstance(hosts, int) else hosts
        self.tag = f"{NS_PREFIX}{os.getpid()}x{next(_counter)}"
        self.switch_in_root = switch_in_root
        self.switch_ns: str | None = None if switch_in_root else f"{self.tag}sw"
        self.offloads_off = offloads_off
        self.hosts: list[Host] = []
        for i, spec in enumerate(specs, start=1):
            port = spec.port if spec.port is not None else i
            if any(h.port == port for h in self.hosts):
                raise ValueError(f"switch port {port} is given to two hosts")
            sw_if = f"{self.tag[-9:]}p{port}" if switch_in_root else f"veth{port}"
            self.hosts.append(Host(spec, f"{self.tag}{spec.name}", "eth0", port, sw_if))
        self._created: list[str] = []

    # -- lifecycle
    def __enter__(self) -> Topology:
        require_netns()
        remove_stale_namespaces()
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
            _delete_namespace(ns)
        if self.switch_in_root:
            for h in self.hosts:  # normally gone with the host namespace already
                subprocess.run(["ip", "link", "del", h.switch_ifname], capture_output=True)
        self._created.clear()
        _live.discard(self)

    def _add_ns(self, ns: str) -> None:
        subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True, timeout=10)
        self._created.append(ns)
        _ns_shell(ns, _SYSCTL)
        _ip_batch(ns, ["link set lo up"])

    def _build(self) -> None:
        if self.switch_ns is not None:
            self._add_ns(self.switch_ns)
        sw_lines = []
        for h in self.hosts:
            self._add_ns(h.ns)
            sw_lines.append(
                f"link add name {h.switch_ifname} type veth peer name {h.ifname} netns {h.ns}")
            sw_lines.append(f"link set {h.switch_ifname} up")
        _ip_batch(self.switch_ns, sw_lines)
        if self.switch_in_root:  # keep IPv6 chatter off the switch ports in the root namespace
            for h in self.hosts:
                conf = f"/proc/sys/net/ipv6/conf/{h.switch_ifname}/disable_ipv6"
                if os.path.exists(conf):
                    with open(conf, "w") as f:
                        f.write("1")
        for h in self.hosts:
            s = h.spec
            lines = [f"link set {h.ifname} address {s.mac}", f"addr add {s.ip} dev {h.ifname}",
                     f"link set {h.ifname} up"]
            if s.gw_ip:
                lines.append(f"route add default via {s.gw_ip} dev {h.ifname}")
                if s.gw_mac:
                    lines.append(
                        f"neigh replace {s.gw_ip} lladdr {s.gw_mac} dev {h.ifname} nud permanent")
            for ip, mac in s.neighbors.items():
                lines.append(f"neigh replace {ip} lladdr {mac} dev {h.ifname} nud permanent")
            _ip_batch(h.ns, lines)
            if self.offloads_off:
                _offloads_off(h.ns, h.ifname)
                if self.switch_ns is not None:
                    _offloads_off(self.switch_ns, h.switch_ifname)
        for h in self.hosts:
            _wait_up(h)

    # -- helpers
    def host(self, name: str) -> Host:
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(name)

    def switch_cmd(self, argv: Sequence[str]) -> list[str]:
        if self.switch_ns is None:
            return list(argv)
        return ["ip", "netns", "exec", self.switch_ns, *argv]

    def switch_popen(self, argv: Sequence[str], **kw: object) -> subprocess.Popen:
        return subprocess.Popen(self.switch_cmd(argv), **kw)  # type: ignore[call-overload]

    def interface_args(self) -> list[str]:
        """``-i 1@veth1 -i 2@veth2 ...`` for ``softnic run`` / ``simple_switch_grpc``."""
        out: list[str] = []
        for h in self.hosts:
            out += ["-i", f"{h.port}@{h.switch_ifname}"]
        return out


def _offloads_off(ns: str, ifname: str) -> None:
    subprocess.run(["ip", "netns", "exec", ns, "ethtool", "-K", ifname, "tx", "off", "rx", "off",
                    "tso", "off", "gso", "off", "gro", "off"], capture_output=True, timeout=10)


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
