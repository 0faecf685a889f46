"""Where the cache's program runs: as the switch, or on each memcached server's own interface.

``switch`` (the default) is the topology of the file: one P4 switch between clients and servers,
running softnic's Python engine, BMv2 or the xdp engine on its ports.

``host`` (the xdp engine only) is where BMC sits, and what a Netronome SmartNIC in the server
would run: there is no P4 switch. The hosts share a plain kernel bridge (a top-of-rack switch
that knows nothing of the cache), and every memcached server runs the cache's program as an XDP
program on its own interface, with its own P4Runtime server, controller and slots. Inside the
server's namespace the program has three ports:

    WIRE_PORT   the server's data interface (eth0). Clients' requests arrive here; a hit is
                turned around and leaves by the same interface without entering the host.
    HOST_PORT   no interface: the server's own network stack (XDP_PASS). Misses, writes and TCP
                go up to memcached and the agent's write gate, as if no program were there.
    AGENT_PORT  a veth pair inside the server (AGENT_IFACE, the stack's end, and PROGRAM_IFACE,
                the program's end). XDP sees only frames a device receives, never those the host
                sends, so the agent's control datagrams (invalidations, updates) would pass the
                program by on eth0. The route to the switch address leads into this pair instead,
                the program takes them at PROGRAM_IFACE and turns its acknowledgements around.

The controller config of a server's program names AGENT_PORT as the server's switch port (the
``trusted_agents`` table matches the ingress port) and bridges the server's own MAC to HOST_PORT;
hits never need a bridge entry, they are turned around to the ingress port.
"""

from __future__ import annotations

from softnic import netns

PLACEMENTS = ("switch", "host")
SWITCH, HOST = PLACEMENTS

WIRE_PORT = 1
HOST_PORT = 2
AGENT_PORT = 3
WIRE_IFACE = "eth0"
AGENT_IFACE = "p4agent0"
PROGRAM_IFACE = "p4agent1"
AGENT_MAC = "02:00:00:00:00:fd"     # AGENT_IFACE's; one per namespace, so it may repeat
BROADCAST_MAC = "ff:ff:ff:ff:ff:ff"
XDP_ENGINE = ("--engine", "xdp")    # softnic run's option for the kernel engine
GRPC_PORT = 9559                    # each server's P4Runtime server, on its management address


class PlacementError(ValueError):
    """A placement the chosen target cannot run; the message says what to use."""


def check(placement: str, target: str) -> None:
    if placement not in PLACEMENTS:
        raise PlacementError(f"unknown placement {placement!r}; use switch (the default) or host")
    if placement == HOST and target != "xdp":
        raise PlacementError(f"--placement host runs the program as an XDP program on each "
                             f"server's interface; it needs --target xdp, not {target}")


def receive_redirects(ifname: str, ns: str | None = None) -> None:
    """Let a veth receive frames an XDP program redirects into its peer. Such frames reach this
    end through its NAPI poll, which a veth runs only with an XDP program or GRO on."""
    netns.run(["ethtool", "-K", ifname, "gro", "on"], ns=ns)


def wire_server(ns: str, server_ip: str, switch_ip: str, switch_mac: str) -> None:
    """The agent's veth pair inside a server's namespace, and the route that leads the agent's
    datagrams to the switch address into it (source: the server's address, which the program
    trusts on AGENT_PORT)."""
    netns.run(["ip", "link", "add", AGENT_IFACE, "type", "veth", "peer", "name", PROGRAM_IFACE],
              ns=ns)
    netns.run(["ip", "link", "set", AGENT_IFACE, "address", AGENT_MAC], ns=ns)
    for ifname in (AGENT_IFACE, PROGRAM_IFACE):
        netns.quiet_interface(ifname, ns)
        netns.run(["ip", "link", "set", ifname, "up"], ns=ns)
    receive_redirects(AGENT_IFACE, ns)
    netns.run(["ip", "route", "replace", f"{switch_ip}/32", "dev", AGENT_IFACE, "src", server_ip],
              ns=ns)
    netns.run(["ip", "neigh", "replace", switch_ip, "lladdr", switch_mac, "dev", AGENT_IFACE,
               "nud", "permanent"], ns=ns)


def add_bridge(name: str, ports: list[str]) -> None:
    """A plain Linux bridge over ``ports`` (root namespace), quiet like every veth here."""
    netns.run(["ip", "link", "add", name, "type", "bridge"])
    netns.quiet_interface(name)
    for iface in ports:
        netns.quiet_interface(iface)
        netns.run(["ip", "link", "set", iface, "master", name, "up"])
    netns.run(["ip", "link", "set", name, "up"])


def server_ports() -> dict[int, str]:
    """The program's ports on a server that have an interface (HOST_PORT has none)."""
    return {WIRE_PORT: WIRE_IFACE, AGENT_PORT: PROGRAM_IFACE}


def server_engine_args(xdp_mode: str = "native") -> list[str]:
    """``softnic run`` options of a server's program, beside its ports and gRPC address."""
    return [*XDP_ENGINE, "--xdp-mode", xdp_mode, "--host-port", str(HOST_PORT)]


def server_l2(server_mac: str) -> list[tuple[str, int]]:
    """(MAC, port) bridge entries of a server's program: its own MAC and broadcast up the stack,
    the agent's veth on AGENT_PORT. Frames for other hosts, which the bridge floods while it
    learns, miss and are dropped, as the NIC's filter would: sent back out of the wire they
    would teach the bridge that their sender sits behind this server."""
    return [(server_mac, HOST_PORT), (BROADCAST_MAC, HOST_PORT), (AGENT_MAC, AGENT_PORT)]
