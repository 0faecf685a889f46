"""topology.json in the p4lang/tutorials shape, plus a ``p4cache`` section per host and switch.

    {
      "hosts": {
        "m1": {"ip": "10.0.0.1/24", "mac": "02:00:00:00:00:01",
               "commands": ["ip neigh replace 10.0.0.2 lladdr 02:00:00:00:00:02 dev eth0 ..."],
               "p4cache": {"role": "memcached", "memcached_udp_port": 11211,
                           "memcached_tcp_port": 11212, "agent_control_port": 11213}},
        "c1": {"ip": "10.0.0.101/24", "mac": "02:00:00:00:01:01", "commands": [],
               "p4cache": {"role": "client"}}
      },
      "switches": {
        "s1": {"program": "p4src/v1model/p4cache.p4", "cpu_port": 255,
               "grpc_addr": "127.0.0.1:9559", "runtime_json": "s1-runtime.json",
               "p4cache": {"ip": "10.0.0.254", "mac": "02:00:00:00:00:fe"}}
      },
      "links": [["m1", "s1-p1"], ["c1", "s1-p2"]]
    }

``commands``, ``grpc_addr`` (default 127.0.0.1:9559), ``runtime_json`` and the switch's ``p4cache``
section (default: the lab's switch address and MAC) are optional; everything else is required.
Each host has one interface, so it is on exactly one link, to a switch port; links between two
switches are allowed, between two hosts are not. Every error names the file, the JSON path of the
offending field and what to change.
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 1 << 20
MAX_HOSTS = 64
MAX_SWITCHES = 64
MAX_PORT = 510                      # switch data ports 1..510 (v1model's 9-bit port, 511 drops)
DEFAULT_GRPC_ADDR = "127.0.0.1:9559"
DEFAULT_SWITCH_IP = "10.0.0.254"
DEFAULT_SWITCH_MAC = "02:00:00:00:00:fe"
ROLES = ("memcached", "client")

_HOST_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,14}")
_SWITCH_NAME = re.compile(r"s[0-9]{1,3}")
_SWITCH_PORT = re.compile(r"(s[0-9]{1,3})-p([0-9]{1,3})")
_MAC = re.compile(r"[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}")


class TopologyError(ValueError):
    """A topology file that cannot be used; the message says where and what to do."""


@dataclass(frozen=True)
class MemcachedPorts:
    udp: int                        # what clients address (memcached's UDP port, the agent's TCP)
    tcp: int                        # memcached's TCP port, the agent's backend
    agent_control: int              # the host agent's control channel


@dataclass(frozen=True)
class Host:
    name: str
    ip: str                         # address without the prefix
    prefix: int
    mac: str                        # lower case
    role: str                       # "memcached" or "client"
    switch: str
    port: int                       # switch port its one link ends on
    commands: tuple[str, ...] = ()
    memcached: MemcachedPorts | None = None  # set exactly when role == "memcached"


@dataclass(frozen=True)
class Switch:
    name: str
    program: str
    cpu_port: int
    grpc_addr: str = DEFAULT_GRPC_ADDR
    ip: str = DEFAULT_SWITCH_IP
    mac: str = DEFAULT_SWITCH_MAC
    runtime_json: str | None = None


@dataclass(frozen=True)
class Link:
    a: str                          # host name, or "sN-pK"
    b: str


@dataclass(frozen=True)
class Topology:
    hosts: tuple[Host, ...]         # in file order
    switches: tuple[Switch, ...]
    links: tuple[Link, ...]
    source: str = "<topology>"

    @property
    def servers(self) -> tuple[Host, ...]:
        return tuple(h for h in self.hosts if h.role == "memcached")

    @property
    def clients(self) -> tuple[Host, ...]:
        return tuple(h for h in self.hosts if h.role == "client")

    def host(self, name: str) -> Host:
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        """The file's content (``load`` of it gives an equal Topology)."""
        hosts: dict[str, Any] = {}
        for h in self.hosts:
            p4: dict[str, Any] = {"role": h.role}
            if h.memcached is not None:
                p4.update(memcached_udp_port=h.memcached.udp, memcached_tcp_port=h.memcached.tcp,
                          agent_control_port=h.memcached.agent_control)
            hosts[h.name] = {"ip": f"{h.ip}/{h.prefix}", "mac": h.mac,
                             "commands": list(h.commands), "p4cache": p4}
        switches: dict[str, Any] = {}
        for s in self.switches:
            d: dict[str, Any] = {"program": s.program, "cpu_port": s.cpu_port,
                                 "grpc_addr": s.grpc_addr}
            if s.runtime_json is not None:
                d["runtime_json"] = s.runtime_json
            d["p4cache"] = {"ip": s.ip, "mac": s.mac}
            switches[s.name] = d
        return {"hosts": hosts, "switches": switches,
                "links": [[link.a, link.b] for link in self.links]}

    def dump(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=4) + "\n")

    def to_lab_spec(self, slots: int | None = None, memcached_mb: int = 64):  # noqa: ANN201
        """The ``p4cache.lab.LabSpec`` for this topology, if it has exactly the lab's shape.

        The lab builds its own addresses: one switch; servers m1..mN at 10.0.0.n/24, MAC
        02:00:00:00:00:nn on ports 1..N; then clients c1..cK at 10.0.0.(100+k)/24, MAC
        02:00:00:00:01:kk on ports N+1..; memcached on the lab's ports; the switch at the lab's
        address, MAC and CPU port.
        """
        from p4cache import dataplane as dp
        from p4cache.lab import lab

        def mismatch(where: str, what: str) -> TopologyError:
            return TopologyError(f"{self.source}: {where}: {what}; p4cache.lab builds only its own "
                                 "shape (one switch, servers m1.. at 10.0.0.n on ports 1.., then "
                                 "clients c1.. at 10.0.0.(100+n)) — run this topology another way "
                                 "or change it to that shape")

        if len(self.switches) != 1:
            raise mismatch("switches", f"{len(self.switches)} switches, the lab has one")
        sw = self.switches[0]
        if (sw.ip, sw.mac, sw.cpu_port) != (lab.SWITCH_ADDR, lab.SWITCH_MAC, dp.CPU_PORT):
            raise mismatch(f"switches.{sw.name}", f"address {sw.ip}, MAC {sw.mac}, cpu_port "
                           f"{sw.cpu_port}; the lab's are {lab.SWITCH_ADDR}, {lab.SWITCH_MAC}, "
                           f"{dp.CPU_PORT}")
        servers, clients = self.servers, self.clients
        if not servers or not clients:
            raise mismatch("hosts", "the lab needs at least one memcached server and one client")
        if self.hosts != servers + clients:
            raise mismatch("hosts", "servers must all come before clients")
        want_ports = MemcachedPorts(lab.MEMCACHED_UDP, lab.MEMCACHED_TCP_BACKEND,
                                    lab.AGENT_CONTROL_PORT)
        for i, h in enumerate(self.hosts):
            if h.role == "memcached":
                n = i + 1
                want = (f"m{n}", f"10.0.0.{n}", 24, f"02:00:00:00:00:{n:02x}", n)
            else:
                n = i + 1 - len(servers)
                want = (f"c{n}", f"10.0.0.{100 + n}", 24, f"02:00:00:00:01:{n:02x}", i + 1)
            got = (h.name, h.ip, h.prefix, h.mac, h.port)
            if got != want:
                raise mismatch(f"hosts.{h.name}", "name, address, MAC, port "
                               f"{got[0]}, {got[1]}/{got[2]}, {got[3]}, {got[4]}; the lab's would "
                               f"be {want[0]}, {want[1]}/{want[2]}, {want[3]}, {want[4]}")
            if h.memcached is not None and h.memcached != want_ports:
                raise mismatch(f"hosts.{h.name}.p4cache", f"memcached ports {h.memcached}; the "
                               f"lab's are {want_ports}")
        return lab.LabSpec(servers=len(servers), clients=len(clients), slots=slots,
                           memcached_mb=memcached_mb)


# ---- loading ----------------------------------------------------------------------------------

def load(path: str | Path) -> Topology:
    """Read and validate a topology file; raise TopologyError saying what is wrong and where."""
    p = Path(path)
    src = str(p)
    try:
        size = p.stat().st_size
    except OSError as e:
        raise TopologyError(f"{src}: cannot read the topology file: {e.strerror}") from e
    if size > MAX_FILE_BYTES:
        raise TopologyError(f"{src}: {size} bytes, more than the {MAX_FILE_BYTES} allowed; a "
                            "topology is a small hand-written file — is this the right path?")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise TopologyError(f"{src}: cannot read the topology file: {e}") from e
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as e:
        raise TopologyError(f"{src}:{e.lineno}:{e.colno}: malformed JSON: {e.msg}; fix the "
                            "syntax there") from e
    except _DuplicateKey as e:
        raise TopologyError(f"{src}: key {e.args[0]!r} appears twice in one object; names must "
                            "be unique — rename or remove one") from e
    return _Parser(src).topology(doc)


class _DuplicateKey(Exception):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def _jtype(v: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true/false",
            int: "a number", float: "a number", type(None): "null"}.get(type(v), type(v).__name__)


class _Parser:
    def __init__(self, src: str) -> None:
        self.src = src

    def err(self, where: str, what: str) -> TopologyError:
        return TopologyError(f"{self.src}: {where}: {what}")

    # generic field checks
    def obj(self, v: Any, where: str, required: tuple[str, ...],
            optional: tuple[str, ...] = ()) -> dict[str, Any]:
        if not isinstance(v, dict):
            raise self.err(where, f"expected an object, found {_jtype(v)}")
        for k in v:
            if k not in required and k not in optional:
                allowed = ", ".join(required + optional)
                raise self.err(f"{where}.{k}" if where != "(top level)" else k,
                               f"unknown field; remove it (allowed here: {allowed})")
        for k in required:
            if k not in v:
                raise self.err(where, f"missing field '{k}'; add it")
        return v

    def string(self, v: Any, where: str) -> str:
        if not isinstance(v, str) or not v:
            raise self.err(where, f"expected a non-empty string, found {_jtype(v)}")
        return v

    def integer(self, v: Any, where: str, lo: int, hi: int) -> int:
        if not isinstance(v, int) or isinstance(v, bool):
            raise self.err(where, f"expected a whole number from {lo} to {hi}, found {_jtype(v)}")
        if not lo <= v <= hi:
            raise self.err(where, f"{v} is out of range; use {lo}..{hi}")
        return v

    def mac(self, v: Any, where: str) -> str:
        s = self.string(v, where)
        if not _MAC.fullmatch(s):
            raise self.err(where, f"{s!r} is not a MAC address; write six hex pairs like "
                           "02:00:00:00:00:01")
        if int(s[:2], 16) & 1 or s.replace(":", "").strip("0") == "":
            raise self.err(where, f"{s} is a multicast or zero MAC; use a unicast one "
                           "(even first byte, e.g. 02:...)")
        return s.lower()

    def ipv4(self, v: Any, where: str, with_prefix: bool) -> tuple[str, int]:
        s = self.string(v, where)
        form = "10.0.0.1/24" if with_prefix else "10.0.0.254"
        if with_prefix != ("/" in s):
            raise self.err(where, f"{s!r}: write the address {'with' if with_prefix else 'without'}"
                           f" a prefix length, like {form}")
        try:
            iface = ipaddress.IPv4Interface(s)
        except ValueError as e:
            raise self.err(where, f"{s!r} is not an IPv4 address ({e}); write it like {form}") \
                from e
        net = iface.network
        if (iface.ip.is_multicast or iface.ip.is_unspecified or iface.ip.is_loopback
                or (net.prefixlen < 31 and iface.ip in (net.network_address,
                                                         net.broadcast_address))):
            raise self.err(where, f"{s} cannot be a host's address (network, broadcast, "
                           "loopback, multicast or 0.0.0.0); pick another")
        return str(iface.ip), net.prefixlen

    # sections
    def topology(self, doc: Any) -> Topology:
        doc = self.obj(doc, "(top level)", ("hosts", "switches", "links"))
        switches = self.switches(doc["switches"])
        hosts_raw = self.hosts(doc["hosts"])
        links, attach = self.links(doc["links"], hosts_raw, {s.name: s for s in switches})
        hosts = []
        for name, fields in hosts_raw.items():
            if name not in attach:
                raise self.err(f"hosts.{name}", "is on no link; add a link like "
                               f'["{name}", "s1-p5"] or remove the host')
            sw, port = attach[name]
            hosts.append(Host(name=name, switch=sw, port=port, **fields))
        ips: dict[str, str] = {s.ip: f"switches.{s.name}.p4cache.ip" for s in switches}
        macs: dict[str, str] = {s.mac: f"switches.{s.name}.p4cache.mac" for s in switches}
        for h in hosts:
            for table, key, field in ((ips, h.ip, "ip"), (macs, h.mac, "mac")):
                where = f"hosts.{h.name}.{field}"
                if key in table:
                    raise self.err(where, f"{key} is already used by {table[key]}; give each "
                                   f"host its own {'address' if field == 'ip' else 'MAC'}")
                table[key] = where
        return Topology(hosts=tuple(hosts), switches=tuple(switches), links=tuple(links),
                        source=self.src)

    def switches(self, v: Any) -> list[Switch]:
        if not isinstance(v, dict) or not v:
            raise self.err("switches", "expected an object with at least one switch, like "
                           '{"s1": {"program": ..., "cpu_port": 255}}')
        if len(v) > MAX_SWITCHES:
            raise self.err("switches", f"{len(v)} switches, at most {MAX_SWITCHES}; split it")
        out = []
        seen_ips: dict[str, str] = {}
        for name, sv in v.items():
            w = f"switches.{name}"
            if not _SWITCH_NAME.fullmatch(name):
                raise self.err(w, "switch names are s<number> (s1, s2, ...); rename it")
            sv = self.obj(sv, w, ("program", "cpu_port"), ("grpc_addr", "runtime_json", "p4cache"))
            program = self.string(sv["program"], f"{w}.program")
            cpu = self.integer(sv["cpu_port"], f"{w}.cpu_port", 1, 511)
            grpc = self.string(sv.get("grpc_addr", DEFAULT_GRPC_ADDR), f"{w}.grpc_addr")
            host, _, port = grpc.rpartition(":")
            if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
                raise self.err(f"{w}.grpc_addr", f"{grpc!r} is not host:port; write it like "
                               f"{DEFAULT_GRPC_ADDR}")
            if grpc in seen_ips:
                raise self.err(f"{w}.grpc_addr", f"{grpc} is already used by {seen_ips[grpc]}; "
                               "give each switch its own P4Runtime address")
            seen_ips[grpc] = f"switches.{name}"
            runtime = sv.get("runtime_json")
            if runtime is not None:
                runtime = self.string(runtime, f"{w}.runtime_json")
            p4 = self.obj(sv.get("p4cache", {}), f"{w}.p4cache", (), ("ip", "mac"))
            ip, _ = self.ipv4(p4.get("ip", DEFAULT_SWITCH_IP), f"{w}.p4cache.ip", False)
            mac = self.mac(p4.get("mac", DEFAULT_SWITCH_MAC), f"{w}.p4cache.mac")
            out.append(Switch(name=name, program=program, cpu_port=cpu, grpc_addr=grpc, ip=ip,
                              mac=mac, runtime_json=runtime))
        return out

    def hosts(self, v: Any) -> dict[str, dict[str, Any]]:
        if not isinstance(v, dict) or not v:
            raise self.err("hosts", "expected an object with at least one host, like "
                           '{"m1": {"ip": "10.0.0.1/24", ...}}')
        if len(v) > MAX_HOSTS:
            raise self.err("hosts", f"{len(v)} hosts, at most {MAX_HOSTS}; remove some")
        out: dict[str, dict[str, Any]] = {}
        for name, hv in v.items():
            w = f"hosts.{name}"
            if not _HOST_NAME.fullmatch(name) or _SWITCH_NAME.fullmatch(name):
                raise self.err(w, "host names are a letter then up to 14 letters, digits or _, "
                               "and not s<number> (that names a switch); rename it")
            hv = self.obj(hv, w, ("ip", "mac", "p4cache"), ("commands",))
            ip, prefix = self.ipv4(hv["ip"], f"{w}.ip", True)
            mac = self.mac(hv["mac"], f"{w}.mac")
            cmds = hv.get("commands", [])
            if not isinstance(cmds, list):
                raise self.err(f"{w}.commands", f"expected a list of strings, found {_jtype(cmds)}")
            commands = tuple(self.string(c, f"{w}.commands[{i}]") for i, c in enumerate(cmds))
            p4 = hv["p4cache"]
            role = p4.get("role") if isinstance(p4, dict) else None
            if role == "memcached":
                keys = ("memcached_udp_port", "memcached_tcp_port", "agent_control_port")
                p4 = self.obj(p4, f"{w}.p4cache", ("role", *keys))
                ports = MemcachedPorts(*[self.integer(p4[k], f"{w}.p4cache.{k}", 1, 65535)
                                         for k in keys])
                if len({ports.udp, ports.tcp, ports.agent_control}) != 3:
                    raise self.err(f"{w}.p4cache", "memcached_udp_port, memcached_tcp_port and "
                                   "agent_control_port must be three different ports (the agent "
                                   "listens on the UDP port's number over TCP too)")
            elif role == "client":
                self.obj(p4, f"{w}.p4cache", ("role",))
                ports = None
            else:
                self.obj(p4, f"{w}.p4cache", ("role",), ("memcached_udp_port", "memcached_tcp_port",
                                                         "agent_control_port"))
                raise self.err(f"{w}.p4cache.role", f"{role!r} is not a role; use one of "
                               f"{', '.join(map(repr, ROLES))}")
            out[name] = {"ip": ip, "prefix": prefix, "mac": mac, "role": role,
                         "commands": commands, "memcached": ports}
        return out

    def links(self, v: Any, hosts: dict[str, Any], switches: dict[str, Switch]
              ) -> tuple[list[Link], dict[str, tuple[str, int]]]:
        if not isinstance(v, list):
            raise self.err("links", f"expected a list of [a, b] pairs, found {_jtype(v)}")
        used_ports: dict[tuple[str, int], str] = {}
        attach: dict[str, tuple[str, int]] = {}
        out = []

        def endpoint(e: Any, where: str) -> tuple[str, int] | str:
            s = self.string(e, where)
            if s in hosts:
                return s
            m = _SWITCH_PORT.fullmatch(s)
            if m is None:
                raise self.err(where, f"{s!r} is neither a host in 'hosts' nor a switch port "
                               "like s1-p3; fix the name or add the host")
            sw, port = m.group(1), int(m.group(2))
            if sw not in switches:
                raise self.err(where, f"switch {sw!r} is not in 'switches'; add it or fix the "
                               "name")
            if not 1 <= port <= MAX_PORT or port == switches[sw].cpu_port:
                raise self.err(where, f"port {port} of {sw} is not a data port; use 1..{MAX_PORT}"
                               f" other than the CPU port {switches[sw].cpu_port}")
            if (sw, port) in used_ports:
                raise self.err(where, f"{s} is already linked at {used_ports[sw, port]}; each "
                               "port takes one link — use another port")
            used_ports[sw, port] = where
            return sw, port

        for i, lv in enumerate(v):
            w = f"links[{i}]"
            if not isinstance(lv, list) or len(lv) != 2:
                raise self.err(w, 'expected a pair like ["m1", "s1-p1"]')
            a, b = endpoint(lv[0], f"{w}[0]"), endpoint(lv[1], f"{w}[1]")
            if isinstance(a, str) and isinstance(b, str):
                raise self.err(w, "links two hosts; a host links to a switch port like s1-p1")
            for h, other, j in ((a, b, 0), (b, a, 1)):
                if isinstance(h, str):
                    assert isinstance(other, tuple)
                    if h in attach:
                        raise self.err(f"{w}[{j}]", f"host {h} is already on a link; a host has "
                                       "one interface, so one link — remove one")
                    attach[h] = other
            out.append(Link(lv[0], lv[1]))
        return out, attach
