"""topology.json loading: the default file, every validation error, LabSpec mapping, round trip."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from p4cache.lab import LabSpec
from p4cache.topo import Topology, TopologyError, load
from p4cache.topo import topology as topo_mod

DEFAULT = Path(__file__).resolve().parents[3] / "topo" / "topology.json"


def default_doc() -> dict[str, Any]:
    return json.loads(DEFAULT.read_text())


def write(tmp_path: Path, doc: Any, name: str = "t.json") -> Path:
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=2))
    return p


def load_edited(tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> Topology:
    doc = default_doc()
    edit(doc)
    return load(write(tmp_path, doc))


# ---- the default topology ---------------------------------------------------------------------

def test_default_topology_loads() -> None:
    t = load(DEFAULT)
    assert [h.name for h in t.hosts] == ["m1", "m2", "c1", "c2"]
    assert [(h.ip, h.prefix, h.mac, h.port, h.role) for h in t.hosts] == [
        ("10.0.0.1", 24, "02:00:00:00:00:01", 1, "memcached"),
        ("10.0.0.2", 24, "02:00:00:00:00:02", 2, "memcached"),
        ("10.0.0.101", 24, "02:00:00:00:01:01", 3, "client"),
        ("10.0.0.102", 24, "02:00:00:00:01:02", 4, "client"),
    ]
    assert all(h.switch == "s1" for h in t.hosts)
    assert [h.name for h in t.servers] == ["m1", "m2"]
    assert [h.name for h in t.clients] == ["c1", "c2"]
    m1 = t.host("m1")
    assert m1.memcached is not None
    assert (m1.memcached.udp, m1.memcached.tcp, m1.memcached.agent_control) == (11211, 11212,
                                                                                 11213)
    assert t.host("c1").memcached is None
    (s1,) = t.switches
    assert (s1.name, s1.program, s1.cpu_port, s1.grpc_addr) == (
        "s1", "p4src/v1model/p4cache.p4", 255, "127.0.0.1:9559")
    assert (s1.ip, s1.mac) == ("10.0.0.254", "02:00:00:00:00:fe")
    assert len(t.links) == 4
    assert (DEFAULT.parents[1] / s1.program).is_file()


def test_default_topology_static_arp_covers_every_peer_and_the_switch() -> None:
    t = load(DEFAULT)
    for h in t.hosts:
        for other in [*t.hosts, t.switches[0]]:
            if other is h:
                continue
            line = f"ip neigh replace {other.ip} lladdr {other.mac} dev eth0 nud permanent"
            assert line in h.commands, (h.name, other.name)


def test_default_topology_is_the_labs_shape() -> None:
    t = load(DEFAULT)
    assert t.to_lab_spec() == LabSpec(servers=2, clients=2)
    assert t.to_lab_spec(slots=128, memcached_mb=32) == LabSpec(servers=2, clients=2, slots=128,
                                                                memcached_mb=32)


def test_frozen() -> None:
    t = load(DEFAULT)
    with pytest.raises(AttributeError):
        t.hosts[0].ip = "10.0.0.9"  # type: ignore[misc]


# ---- round trip -------------------------------------------------------------------------------

def test_round_trip(tmp_path: Path) -> None:
    t = load(DEFAULT)
    out = tmp_path / "again.json"
    t.dump(out)
    t2 = load(out)
    assert t2.hosts == t.hosts and t2.switches == t.switches and t2.links == t.links
    assert t2.source == str(out)
    assert t2.to_json() == t.to_json()


def test_round_trip_with_optional_fields(tmp_path: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["switches"]["s1"]["runtime_json"] = "s1-runtime.json"
        del d["hosts"]["c2"]["commands"]
        d["hosts"]["c1"]["mac"] = "02:00:00:00:01:AB"
    t = load_edited(tmp_path, edit)
    assert t.switches[0].runtime_json == "s1-runtime.json"
    assert t.host("c2").commands == ()
    assert t.host("c1").mac == "02:00:00:00:01:ab"
    t.dump(tmp_path / "again.json")
    assert load(tmp_path / "again.json").hosts == t.hosts


def test_defaults_for_optional_switch_fields(tmp_path: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        del d["switches"]["s1"]["grpc_addr"]
        del d["switches"]["s1"]["p4cache"]
    s1 = load_edited(tmp_path, edit).switches[0]
    assert (s1.grpc_addr, s1.ip, s1.mac) == ("127.0.0.1:9559", "10.0.0.254", "02:00:00:00:00:fe")


def test_two_switches_load_but_are_not_the_lab(tmp_path: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        d["switches"]["s2"] = {"program": "p4src/v1model/p4cache.p4", "cpu_port": 255,
                               "grpc_addr": "127.0.0.1:9560",
                               "p4cache": {"ip": "10.0.0.253", "mac": "02:00:00:00:00:fd"}}
        d["links"][3] = ["c2", "s2-p1"]
        d["links"].append(["s1-p9", "s2-p9"])
    t = load_edited(tmp_path, edit)
    assert t.host("c2").switch == "s2" and t.host("c2").port == 1
    with pytest.raises(TopologyError, match=r"switches: 2 switches, the lab has one"):
        t.to_lab_spec()


# ---- validation errors: each names the file and the JSON path ---------------------------------

def _del(path: str) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for p in parents:
            d = d[p]
        del d[last]
    return edit


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for p in parents:
            d = d[int(p)] if isinstance(d, list) else d[p]
        if isinstance(d, list):
            d[int(last)] = value
        else:
            d[last] = value
    return edit


CASES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("unknown top-level field", _set("extra", 1), r": extra: unknown field; remove it"),
    ("unknown host field", _set("hosts.m1.gateway", "10.0.0.254"),
     r": hosts\.m1\.gateway: unknown field; remove it \(allowed here: ip, mac, p4cache, commands"),
    ("unknown switch field", _set("switches.s1.thrift_port", 9090),
     r": switches\.s1\.thrift_port: unknown field"),
    ("unknown p4cache field on a client", _set("hosts.c1.p4cache.agent_control_port", 1),
     r": hosts\.c1\.p4cache\.agent_control_port: unknown field"),
    ("missing hosts", _del("hosts"), r": \(top level\): missing field 'hosts'; add it"),
    ("missing ip", _del("hosts.m2.ip"), r": hosts\.m2: missing field 'ip'; add it"),
    ("ip without prefix", _set("hosts.m1.ip", "10.0.0.1"),
     r": hosts\.m1\.ip: '10\.0\.0\.1': write the address with a prefix length, "
     r"like 10\.0\.0\.1/24"),
    ("bad ip", _set("hosts.m1.ip", "10.0.0.300/24"),
     r": hosts\.m1\.ip: '10\.0\.0\.300/24' is not an IPv4 address .*write it like"),
    ("ip not a string", _set("hosts.m1.ip", 167772161),
     r": hosts\.m1\.ip: expected a non-empty string, found a number"),
    ("broadcast ip", _set("hosts.c1.ip", "10.0.0.255/24"),
     r": hosts\.c1\.ip: 10\.0\.0\.255/24 cannot be a host's address"),
    ("bad mac", _set("hosts.m1.mac", "02:00:00:00:01"),
     r": hosts\.m1\.mac: '02:00:00:00:01' is not a MAC address; write six hex pairs"),
    ("multicast mac", _set("hosts.m1.mac", "01:00:5e:00:00:01"),
     r": hosts\.m1\.mac: 01:00:5e:00:00:01 is a multicast or zero MAC; use a unicast one"),
    ("duplicate ip", _set("hosts.c2.ip", "10.0.0.1/24"),
     r": hosts\.c2\.ip: 10\.0\.0\.1 is already used by hosts\.m1\.ip; give each host its own "
     r"address"),
    ("ip of the switch", _set("hosts.c2.ip", "10.0.0.254/24"),
     r": hosts\.c2\.ip: 10\.0\.0\.254 is already used by switches\.s1\.p4cache\.ip"),
    ("duplicate mac (case-insensitive)", _set("hosts.m2.mac", "02:00:00:00:01:01".upper()),
     r": hosts\.c1\.mac: 02:00:00:00:01:01 is already used by hosts\.m2\.mac; give each host "
     r"its own MAC"),
    ("duplicate switch port", _set("links.3", ["c2", "s1-p3"]),
     r": links\[3\]\[1\]: s1-p3 is already linked at links\[2\]\[1\]; each port takes one link"),
    ("cpu port used as a data port", _set("links.3", ["c2", "s1-p255"]),
     r": links\[3\]\[1\]: port 255 of s1 is not a data port; use 1\.\.510 other than the CPU port"),
    ("port 0", _set("links.3", ["c2", "s1-p0"]), r": links\[3\]\[1\]: port 0 of s1 is not a data"),
    ("link to an unknown host", _set("links.3", ["c3", "s1-p4"]),
     r": links\[3\]\[0\]: 'c3' is neither a host in 'hosts' nor a switch port like s1-p3"),
    ("link to an unknown switch", _set("links.3", ["c2", "s2-p4"]),
     r": links\[3\]\[1\]: switch 's2' is not in 'switches'; add it or fix the name"),
    ("link between two hosts", _set("links.3", ["c2", "c1"]),
     r": links\[3\]: links two hosts; a host links to a switch port"),
    ("link not a pair", _set("links.3", ["c2", "s1-p4", "10ms"]),
     r": links\[3\]: expected a pair like"),
    ("host on two links", lambda d: d["links"].append(["s1-p7", "m1"]),
     r": links\[4\]\[1\]: host m1 is already on a link; a host has one interface"),
    ("host on no link", lambda d: d["links"].pop(),
     r": hosts\.c2: is on no link; add a link like \[\"c2\", \"s1-p5\"\] or remove the host"),
    ("server without memcached ports", _set("hosts.m1.p4cache", {"role": "memcached"}),
     r": hosts\.m1\.p4cache: missing field 'memcached_udp_port'; add it"),
    ("server without agent port", _del("hosts.m2.p4cache.agent_control_port"),
     r": hosts\.m2\.p4cache: missing field 'agent_control_port'; add it"),
    ("memcached port out of range", _set("hosts.m1.p4cache.memcached_tcp_port", 70000),
     r": hosts\.m1\.p4cache\.memcached_tcp_port: 70000 is out of range; use 1\.\.65535"),
    ("memcached port a boolean", _set("hosts.m1.p4cache.memcached_tcp_port", True),
     r": hosts\.m1\.p4cache\.memcached_tcp_port: expected a whole number from 1 to 65535"),
    ("memcached ports clash", _set("hosts.m1.p4cache.agent_control_port", 11211),
     r": hosts\.m1\.p4cache: memcached_udp_port, memcached_tcp_port and agent_control_port must "
     r"be three different ports"),
    ("unknown role", _set("hosts.c1.p4cache.role", "proxy"),
     r": hosts\.c1\.p4cache\.role: 'proxy' is not a role; use one of 'memcached', 'client'"),
    ("missing role", _set("hosts.c1.p4cache", {}),
     r": hosts\.c1\.p4cache: missing field 'role'; add it"),
    ("command not a string", _set("hosts.c1.commands", ["ip link", 3]),
     r": hosts\.c1\.commands\[1\]: expected a non-empty string, found a number"),
    ("bad switch name", lambda d: d["switches"].update(sw={"program": "x.p4", "cpu_port": 255}),
     r": switches\.sw: switch names are s<number>"),
    ("host named like a switch", lambda d: d["hosts"].update(s9=d["hosts"].pop("c2")),
     r": hosts\.s9: host names are a letter then"),
    ("bad cpu port", _set("switches.s1.cpu_port", 512),
     r": switches\.s1\.cpu_port: 512 is out of range; use 1\.\.511"),
    ("bad grpc address", _set("switches.s1.grpc_addr", "localhost"),
     r": switches\.s1\.grpc_addr: 'localhost' is not host:port; write it like 127\.0\.0\.1:9559"),
    ("switch mac bad", _set("switches.s1.p4cache.mac", "zz:00:00:00:00:fe"),
     r": switches\.s1\.p4cache\.mac: 'zz:00:00:00:00:fe' is not a MAC address"),
    ("no switches", _set("switches", {}), r": switches: expected an object with at least one"),
    ("links not a list", _set("links", {}), r": links: expected a list of \[a, b\] pairs"),
    ("host not an object", _set("hosts.c1", "10.0.0.101"),
     r": hosts\.c1: expected an object, found a string"),
]


@pytest.mark.parametrize(("edit", "pattern"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validation_error(tmp_path: Path, edit: Callable[[dict[str, Any]], None],
                          pattern: str) -> None:
    with pytest.raises(TopologyError) as info:
        load_edited(tmp_path, edit)
    msg = str(info.value)
    assert msg.startswith(str(tmp_path / "t.json") + ": "), msg
    assert re.search(pattern, msg), msg
    assert isinstance(info.value, ValueError)


def test_malformed_json_has_line_and_column(tmp_path: Path) -> None:
    p = write(tmp_path, '{\n  "hosts": {\n    "m1": {"ip": "10.0.0.1/24",}\n  }\n}\n')
    with pytest.raises(TopologyError, match=r"t\.json:3:\d+: malformed JSON: .*; fix the syntax"):
        load(p)


def test_duplicate_key(tmp_path: Path) -> None:
    text = DEFAULT.read_text().replace('"c2": {', '"m1": {', 1)
    with pytest.raises(TopologyError, match=r"t\.json: key 'm1' appears twice in one object"):
        load(write(tmp_path, text))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match=r"nope\.json: cannot read the topology file"):
        load(tmp_path / "nope.json")


def test_file_too_large(tmp_path: Path) -> None:
    p = write(tmp_path, " " * (topo_mod.MAX_FILE_BYTES + 1))
    with pytest.raises(TopologyError, match=r"t\.json: 1048577 bytes, more than the 1048576"):
        load(p)


def test_too_many_hosts(tmp_path: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        for n in range(3, topo_mod.MAX_HOSTS):   # 4 + 61 = 65 hosts
            d["hosts"][f"c{n}"] = copy.deepcopy(d["hosts"]["c1"])
    with pytest.raises(TopologyError, match=r"t\.json: hosts: 65 hosts, at most 64"):
        load_edited(tmp_path, edit)


def test_64_hosts_are_fine(tmp_path: Path) -> None:
    def edit(d: dict[str, Any]) -> None:
        for n in range(3, topo_mod.MAX_HOSTS - 1):
            h = copy.deepcopy(d["hosts"]["c1"])
            h["ip"], h["mac"] = f"10.0.0.{100 + n}/24", f"02:00:00:00:01:{n:02x}"
            d["hosts"][f"c{n}"] = h
            d["links"].append([f"c{n}", f"s1-p{n + 2}"])
    t = load_edited(tmp_path, edit)
    assert len(t.hosts) == 64
    assert t.to_lab_spec() == LabSpec(servers=2, clients=62)


# ---- shapes the lab cannot build --------------------------------------------------------------

LAB_MISMATCH = [
    ("client before server", lambda d: d.update(hosts={
        "c1": d["hosts"]["c1"], "m1": d["hosts"]["m1"], "m2": d["hosts"]["m2"],
        "c2": d["hosts"]["c2"]}), r"hosts: servers must all come before clients"),
    ("other address", _set("hosts.m2.ip", "10.0.0.7/24"),
     r"hosts\.m2: name, address, MAC, port m2, 10\.0\.0\.7/24, 02:00:00:00:00:02, 2; the lab's "
     r"would be m2, 10\.0\.0\.2/24"),
    ("other ports", lambda d: d.update(links=[["m1", "s1-p2"], ["m2", "s1-p1"], ["c1", "s1-p3"],
                                              ["c2", "s1-p4"]]), r"hosts\.m1: name, address"),
    ("other memcached port", _set("hosts.m1.p4cache.memcached_tcp_port", 11300),
     r"hosts\.m1\.p4cache: memcached ports"),
    ("other cpu port", _set("switches.s1.cpu_port", 64), r"switches\.s1: address .*cpu_port 64"),
    ("no clients", lambda d: (d["hosts"].pop("c1"), d["hosts"].pop("c2"), d["links"].pop(),
                              d["links"].pop()),
     r"hosts: the lab needs at least one memcached server and one client"),
]


@pytest.mark.parametrize(("edit", "pattern"), [c[1:] for c in LAB_MISMATCH],
                         ids=[c[0] for c in LAB_MISMATCH])
def test_not_the_labs_shape(tmp_path: Path, edit: Callable[[dict[str, Any]], None],
                            pattern: str) -> None:
    t = load_edited(tmp_path, edit)
    with pytest.raises(TopologyError) as info:
        t.to_lab_spec()
    msg = str(info.value)
    assert msg.startswith(str(tmp_path / "t.json") + ": "), msg
    assert re.search(pattern, msg), msg
    assert "p4cache.lab builds only its own shape" in msg
