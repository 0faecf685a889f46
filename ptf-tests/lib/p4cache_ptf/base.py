"""The base class of the p4cache PTF tests, and the test topology.

Every test starts from a freshly pushed pipeline (SetForwardingPipelineConfig resets tables,
registers and counters), so tests do not depend on each other or on their order. The switch
then holds the topology below, installed by name over P4Runtime::

    port 0  client   02:00:00:00:00:01  10.0.0.1  (in the allow-list 10.0.0.0/24)
    port 1  server   02:00:00:00:00:02  10.0.0.2  (memcached and its host agent, trusted)
    port 2  server2  02:00:00:00:00:03  10.0.0.3  (a second memcached and agent, trusted;
                                                   also the next hop of 10.9.0.0/16)
    CPU port 255: packet-out / packet-in

Cache entries are per server: (server address, key length, key) -> slot. A host agent speaks
for the server it runs next to, so its control datagrams come from that server's address, and
trusted_agents holds (port, address): the server's address from another port is not trusted. A
datagram the switch cannot read to its end as one command line flushes the cache (a new
generation): a slot then needs a newer invalidation before a fill applies (:meth:`refill`).

Test parameters (``ptf --test-params``), set by ptf-tests/run.sh:
``grpcaddr`` (P4Runtime server), ``p4info`` and ``config`` (P4Info text and BMv2 JSON paths),
``device_id``, ``target`` (softnic or bmv2, for messages only: tests behave the same).
"""

from __future__ import annotations

import time
from pathlib import Path

import ptf
import ptf.testutils as tu
from ptf.base_tests import BaseTest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from p4cache import dataplane as dp

from .p4runtime import P4Info, P4RuntimeClient

CLIENT_PORT, SERVER_PORT, SERVER2_PORT = 0, 1, 2
CPU_PORT = dp.CPU_PORT

CLIENT_MAC, SERVER_MAC, SERVER2_MAC = "02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:00:03"
CLIENT_IP, SERVER_IP, SERVER2_IP = "10.0.0.1", "10.0.0.2", "10.0.0.3"
ALLOWED_NET = ("10.0.0.0", 24)
OUTSIDER_IP = "192.168.7.7"  # not in the allow-list, not a trusted agent

SWITCH_MAC = "02:00:00:00:00:fe"  # the router's MAC: source of routed packets
SWITCH_IP = "10.0.0.254"
NEXTHOP_MAC = "02:00:00:00:00:99"
ROUTED_NET = ("10.9.0.0", 16)  # routed to SERVER2_PORT via NEXTHOP_MAC

SERVERS = {SERVER_IP: (SERVER_PORT, SERVER_MAC), SERVER2_IP: (SERVER2_PORT, SERVER2_MAC)}

CLIENT_UDP_PORT = 40000
AGENT_UDP_PORT = 41311  # source port of the host agents


def mac_int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


def ip_int(ip: str) -> int:
    a, b, c, d = (int(x) for x in ip.split("."))
    return a << 24 | b << 16 | c << 8 | d


_p4info_cache: dict[str, P4Info] = {}


def _params() -> dict:
    params = tu.test_params_get()
    missing = [k for k in ("grpcaddr", "p4info", "config") if k not in params]
    if missing:
        raise RuntimeError(f"test parameters {missing} missing: run the suite with "
                           "ptf-tests/run.sh (make ptf), which passes them")
    return params


class P4CacheTest(BaseTest):
    """Connects as primary controller, pushes the pipeline and installs the topology."""

    install_topology = True

    def setUp(self) -> None:
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        params = _params()
        self.target = params.get("target", "softnic")
        path = params["p4info"]
        if path not in _p4info_cache:
            _p4info_cache[path] = P4Info.from_file(path)
        self.p4rt = P4RuntimeClient(params["grpcaddr"], _p4info_cache[path],
                                    device_id=int(params.get("device_id", 0)))
        self.p4rt.set_pipeline(Path(params["config"]).read_bytes())
        if self.install_topology:
            self.setup_topology()
        self.dataplane.flush()

    def tearDown(self) -> None:
        self.p4rt.close()
        BaseTest.tearDown(self)

    # -- control plane
    def setup_topology(self) -> None:
        for mac, port in ((CLIENT_MAC, CLIENT_PORT), (SERVER_MAC, SERVER_PORT),
                          (SERVER2_MAC, SERVER2_PORT)):
            self.p4rt.insert(dp.TABLE_L2, {"dst_addr": mac_int(mac)}, "bridge", {"port": port})
        self.p4rt.insert(dp.TABLE_ROUTE, {"dst_addr": (ip_int(ROUTED_NET[0]), ROUTED_NET[1])},
                         "route", {"src_mac": mac_int(SWITCH_MAC),
                                   "dst_mac": mac_int(NEXTHOP_MAC), "port": SERVER2_PORT})
        self.p4rt.insert(dp.TABLE_ALLOWLIST,
                         {"src_addr": (ip_int(ALLOWED_NET[0]), ALLOWED_NET[1])}, "allow_client")
        for server, (port, _) in SERVERS.items():
            self.p4rt.insert(dp.TABLE_AGENTS, {"ingress_port": port, "src_addr": ip_int(server)},
                             "trust_agent")

    def add_lookup(self, key: bytes, slot: int, server: str = SERVER_IP) -> None:
        server_addr, key_len, key_value = dp.lookup_key(server, key)
        self.p4rt.insert(dp.TABLE_LOOKUP,
                         {"server_addr": server_addr, "key_len": key_len, "key": key_value},
                         "set_slot", {"slot": slot})

    def cache(self, key: bytes, slot: int, reply: bytes, version: int = 1,
              server: str = SERVER_IP) -> None:
        """What the controller does to cache an item: value into the slot, then the entry."""
        ack = self.update(slot, version, reply, server=server)
        self.assertEqual(ack.status, dp.STATUS_APPLIED, f"update of slot {slot}: {ack}")
        self.add_lookup(key, slot, server)

    def stats(self) -> list[int]:
        """Packet counts of cache_stats, by STAT_* index."""
        cells = self.p4rt.read_counters(dp.COUNTER_STATS)
        return [cells.get(i, (0, 0))[0] for i in range(dp.STATS_SIZE)]

    def assert_stats(self, timeout: float = 1.0, **expected: int) -> None:
        """Check cache_stats cells by name (hit=1, miss=0, ...); cells not named must be 0,
        except `refill` (refill asks, hot_keys.RefillAsk), checked only when named: any test
        whose cached key misses makes one, and which is beside most tests' point.

        Counters are read until they match or ``timeout`` passes, since a dropped packet gives
        no sign of when the switch has processed it."""
        names = {n[len("STAT_"):].lower(): getattr(dp, n) for n in dir(dp)
                 if n.startswith("STAT_")}
        unknown = set(expected) - set(names)
        if unknown:
            raise KeyError(f"no counter cells {sorted(unknown)}")
        if "refill" not in expected:
            names.pop("refill")
        want = {name: expected.get(name, 0) for name in names}
        deadline = time.monotonic() + timeout
        while True:
            got = self.stats()
            have = {name: got[i] for name, i in names.items()}
            if have == want or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        self.assertEqual(have, want, "cache_stats (packets)")

    # -- frames
    @staticmethod
    def udp_frame(payload: bytes, *, src_mac: str = CLIENT_MAC, dst_mac: str = SERVER_MAC,
                  src_ip: str = CLIENT_IP, dst_ip: str = SERVER_IP,
                  sport: int = CLIENT_UDP_PORT, dport: int = dp.MEMCACHED_PORT,
                  ip_id: int = 0x4242, **ip_fields: object) -> Packet:
        ip_fields.setdefault("ttl", 63)
        return (Ether(src=src_mac, dst=dst_mac)
                / IP(src=src_ip, dst=dst_ip, id=ip_id, **ip_fields)
                / UDP(sport=sport, dport=dport) / Raw(payload))

    def get_frame(self, key: bytes, request_id: int = 1, **kw: object) -> Packet:
        return self.udp_frame(dp.get_request(request_id, key), **kw)

    @staticmethod
    def reply_frame(request: Packet, payload: bytes) -> Packet:
        """The frame the switch sends back for ``request``: addresses and ports swapped, TTL 64,
        IPv4 checksum recomputed, UDP checksum 0, ``payload`` as UDP payload."""
        req = Ether(bytes(request))
        ip, udp = req[IP], req[UDP]
        return (Ether(src=req.dst, dst=req.src)
                / IP(src=ip.dst, dst=ip.src, id=ip.id, flags=ip.flags, tos=ip.tos, ttl=64)
                / UDP(sport=udp.dport, dport=udp.sport, chksum=0) / Raw(payload))

    # -- packet checks
    def send(self, port: int, frame: Packet | bytes) -> None:
        tu.send_packet(self, port, bytes(frame))

    def expect_forwarded(self, frame: Packet | bytes, in_port: int = CLIENT_PORT,
                         out_port: int = SERVER_PORT) -> None:
        """``frame`` leaves ``out_port`` byte for byte as it came, and nothing else leaves."""
        self.send(in_port, frame)
        tu.verify_packet(self, bytes(frame), out_port)
        tu.verify_no_other_packets(self)

    def expect_hit(self, request: Packet, payload: bytes, port: int = CLIENT_PORT) -> bytes:
        """The switch answers ``request`` with ``payload``, out of the port it came in by;
        returns the reply frame."""
        self.send(port, request)
        expected = bytes(self.reply_frame(request, payload))
        res = tu.dp_poll(self, port_number=port, timeout=ptf.ptfutils.default_timeout)
        if not isinstance(res, self.dataplane.PollSuccess):
            self.fail(f"no reply on port {port} for {request.summary()}")
        got = bytes(res.packet)
        if got != expected:
            got_payload = bytes(Ether(got)[UDP].payload) if UDP in Ether(got) else b""
            self.fail(f"reply differs from the expected frame\n expected {expected.hex()}\n"
                      f"      got {got.hex()}\n expected payload {payload!r}\n"
                      f"      got payload {got_payload!r}")
        tu.verify_no_other_packets(self)
        return got

    # -- control datagrams
    def ctrl_frame(self, payload: bytes, src_ip: str = SERVER_IP, src_mac: str = SERVER_MAC,
                   sport: int = AGENT_UDP_PORT) -> Packet:
        """A control datagram from a host agent (by default the server's) to the switch."""
        return self.udp_frame(payload, src_mac=src_mac, dst_mac=SWITCH_MAC, src_ip=src_ip,
                              dst_ip=SWITCH_IP, sport=sport, dport=dp.CACHE_CTRL_PORT)

    def ctrl(self, payload: bytes, via: str = "agent", server: str = SERVER_IP,
             quiet: bool = True) -> dp.Ctrl:
        """Send a control datagram on behalf of ``server`` (from its host agent on its port, or
        as a packet-out) and return the acknowledgement, checking it is the datagram turned
        around in place and (``quiet``) that nothing else came out."""
        port, mac = SERVERS[server]
        request = self.ctrl_frame(payload, src_ip=server, src_mac=mac)
        if via == "agent":
            self.send(port, request)
            res = tu.dp_poll(self, port_number=port, timeout=ptf.ptfutils.default_timeout)
            if not isinstance(res, self.dataplane.PollSuccess):
                self.fail(f"no acknowledgement on port {port} for {payload[:10].hex()}")
            got = bytes(res.packet)
        elif via == "cpu":
            self.p4rt.packet_out(bytes(request), egress_port=0)
            pin = self.p4rt.get_packet_in(timeout=ptf.ptfutils.default_timeout)
            if pin is None:
                self.fail("no packet-in acknowledging a packet-out control datagram")
            self.assertEqual(pin.metadata.get("ingress_port"), CPU_PORT,
                             "packet-in ingress_port of an acknowledgement")
            got = pin.payload
        else:
            raise ValueError(via)
        if quiet:
            tu.verify_no_other_packets(self)
        ack_payload = bytes(Ether(got)[UDP].payload)
        self.assertEqual(bytes(self.reply_frame(request, ack_payload)), got,
                         "acknowledgement is not the control datagram turned around")
        ack = dp.parse_ctrl(ack_payload)
        sent = dp.parse_ctrl(payload)
        self.assertEqual(len(ack.body), 0, "acknowledgement carries bytes after its header")
        self.assertEqual(ack.op, sent.op | dp.ACK_FLAG, "acknowledgement op")
        self.assertEqual(ack.slot, sent.slot, "acknowledgement slot")
        if sent.op != dp.OP_READ:
            self.assertEqual((ack.version, ack.length), (sent.version, sent.length),
                             "acknowledgement version/length")
        return ack

    def update(self, slot: int, version: int, reply: bytes, via: str = "agent",
               server: str = SERVER_IP, quiet: bool = True) -> dp.Ctrl:
        return self.ctrl(dp.update_datagram(slot, version, reply), via=via, server=server,
                         quiet=quiet)

    def refill(self, slot: int, reply: bytes, version: int, server: str = SERVER_IP) -> int:
        """The controller's refill after a write or a flush: an invalidation at ``version``
        (clears `written` and takes the current cache generation), then the reply at
        ``version`` + 1; both must apply. Returns the slot's new version."""
        for v, data in ((version, b""), (version + 1, reply)):
            ack = self.update(slot, v, data, server=server, quiet=False)
            self.assertEqual(ack.status, dp.STATUS_APPLIED, f"refill of slot {slot}: {ack}")
        return version + 1
