"""A Mininet network from a ``Topology``, whose namespaces outlive the Python process.

``build(topo, target, ...)`` makes one Mininet host per topology host (its address and MAC, its
interface renamed ``eth0`` as tutorials' P4Host does, so the file's ``commands`` can say
``dev eth0``; Mininet's name, e.g. ``m1-eth0``, stays as an alternative name), one P4Runtime switch
per topology switch (``s1-eth<port>`` on the port numbers of the file), the links, then:

- pins each host's network namespace as ``p4c-<host>`` (``ip netns attach``), so later processes
  enter it with ``ip netns exec p4c-<host> ...`` after the building process (and with it the
  Mininet host shells) exited;
- runs each host's ``commands`` (static ARP) inside its namespace;
- starts the switches.

Mininet's own teardown (``net.stop()``) is not used for a running system: p4cache.system's
``down`` deletes the namespaces (which deletes their veths) and kills the switch's process group.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mininet.log import setLogLevel
from mininet.net import Mininet
from mininet.node import Host as MnHost

from p4cache.topo import placement as pl
from p4cache.topo.switches import SWITCH_CLASSES, KernelBridge, P4RuntimeSwitch
from p4cache.topo.topology import Topology
from softnic import netns

NS_PREFIX = "p4c-"
HOST_IFACE = "eth0"


def ns_name(host: str) -> str:
    return f"{NS_PREFIX}{host}"


class P4Host(MnHost):
    """A host with one interface called eth0, no IPv6 chatter and no checksum offload
    (tutorials' P4Host: frames leave complete, as on a wire, for the software switch)."""

    def config(self, **params: Any) -> dict[str, Any]:
        r = super().config(**params)
        intf = self.defaultIntf()
        mn_name = intf.name
        if mn_name != HOST_IFACE:
            intf.rename(HOST_IFACE)
            self.cmd(f"ip link property add dev {HOST_IFACE} altname {mn_name} 2>/dev/null")
        for flag in ("all", "default", "lo"):
            self.cmd(f"sysctl -qw net.ipv6.conf.{flag}.disable_ipv6=1")
        self.cmd(f"ethtool -K {HOST_IFACE} tx off rx off sg off tso off gso off gro off "
                 ">/dev/null 2>&1")
        return r


@dataclass
class BuiltNet:
    net: Mininet
    namespaces: dict[str, str] = field(default_factory=dict)      # host -> namespace
    switch_ifaces: dict[str, dict[int, str]] = field(default_factory=dict)  # switch -> ports

    def release(self) -> None:
        """End Mininet's shells (one per node): the namespaces are pinned and the switch runs
        in its own session, so nothing else needs them once the network is built."""
        for node in [*self.net.hosts, *self.net.switches]:
            node.terminate()

    def switch(self, name: str) -> P4RuntimeSwitch:
        sw = self.net.get(name)
        assert isinstance(sw, P4RuntimeSwitch)
        return sw


def _switch_port(end: str) -> tuple[str, int] | None:
    sw, _, p = end.partition("-p")
    return (sw, int(p)) if p.isdigit() and sw.startswith("s") else None


def _run_commands(topo: Topology, host: str, ns: str) -> None:
    """The host's ``commands`` from the topology file (static ARP), inside its namespace."""
    for cmd in topo.host(host).commands:
        r = subprocess.run(["ip", "netns", "exec", ns, "sh", "-c", cmd], capture_output=True,
                           text=True, check=False)
        if r.returncode != 0:
            raise RuntimeError(f"{topo.source}: hosts.{host}.commands: {cmd!r} failed in {host} "
                               f"({r.returncode}): {r.stderr.strip()}; fix the command in the "
                               "topology file")


def build(topo: Topology, target: str = "softnic", log_dir: Path = Path("/tmp"),
          grpc_addrs: dict[str, str] | None = None,
          on_namespace: Callable[[str, str], None] | None = None,
          on_switch: Callable[[P4RuntimeSwitch], None] | None = None,
          placement: str = pl.SWITCH) -> BuiltNet:
    """Build and start the network (root needed). ``on_namespace(host, ns)`` is called as each
    namespace is pinned and ``on_switch(sw)`` as each P4 switch starts, so the caller can record
    them before anything else can fail. With the host placement the switches are plain bridges
    (the caller starts the servers' programs). Raises RuntimeError saying what failed."""
    setLogLevel("warning")
    cls: type = KernelBridge if placement == pl.HOST else SWITCH_CLASSES[target]
    net = Mininet(topo=None, switch=cls, host=P4Host, controller=None, build=False,
                  autoSetMacs=False, autoStaticArp=False)
    built = BuiltNet(net)
    for s in topo.switches:
        grpc = (grpc_addrs or {}).get(s.name, s.grpc_addr)
        net.addSwitch(s.name, cls=cls, grpc_addr=grpc, cpu_port=s.cpu_port,
                      log_file=str(log_dir / f"{s.name}.log"))
    for h in topo.hosts:
        net.addHost(h.name, ip=f"{h.ip}/{h.prefix}", mac=h.mac)
    for link in topo.links:
        a, b = _switch_port(link.a), _switch_port(link.b)
        if a is None and b is not None:        # host - switch port
            net.addLink(link.a, b[0], port2=b[1], addr1=topo.host(link.a).mac)
        elif b is None and a is not None:
            net.addLink(link.b, a[0], port2=a[1], addr1=topo.host(link.b).mac)
        elif a is not None and b is not None:  # switch - switch
            net.addLink(a[0], b[0], port1=a[1], port2=b[1])
    net.build()
    try:
        for h in topo.hosts:
            ns = ns_name(h.name)
            pid = net.get(h.name).pid
            netns.run(["ip", "netns", "attach", ns, str(pid)])
            built.namespaces[h.name] = ns
            if on_namespace is not None:
                on_namespace(h.name, ns)
            _run_commands(topo, h.name, ns)
            if target == "xdp" and placement == pl.SWITCH:
                pl.receive_redirects(HOST_IFACE, ns)   # the switch's program redirects to it
        for s in topo.switches:
            node = net.get(s.name)
            built.switch_ifaces[s.name] = node.data_ports()
            node.start([])
            if on_switch is not None and isinstance(node, P4RuntimeSwitch):
                on_switch(node)
    finally:
        built.release()
    return built
