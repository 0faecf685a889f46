"""A small v1model program, as BMv2 JSON and P4Info, for the P4Runtime service tests.

Written by hand in the shape p4c-bm2-ss emits, because the tests need every kind of P4Runtime
object in one pipeline: exact / lpm / ternary tables (one with a direct counter, one with a const
default action), an indexed counter, a meter, a register, a digest and the packet_in / packet_out
controller headers. The P4 it stands for:

    header packet_out_t { bit<9> egress_port; bit<7> _pad; }   // @controller_header("packet_out")
    header packet_in_t  { bit<9> ingress_port; bit<7> _pad; }  // @controller_header("packet_in")
    parser: ingress_port == 64 ? packet_out -> ethernet : ethernet; 0x800 -> ipv4
    ingress:
      if (hdr.packet_out.isValid()) { egress_spec = hdr.packet_out.egress_port; setInvalid; }
      else { t_exact.apply();  if (hdr.ipv4.isValid()) { t_lpm.apply(); t_tern.apply(); } }
      t_exact   (ethernet.dstAddr exact)  fwd(port) [counts c_ingress[port]] | drop | NoAction
      t_lpm     (ipv4.dstAddr lpm)        set_nhop(dmac, port) | NoAction, const default NoAction
      t_tern    (ipv4.srcAddr ternary, ipv4.protocol exact)
                to_cpu | learn [digest learn_t{srcAddr, ingress_port}] | mcast(grp) | remember(idx)
    deparser: packet_in, ethernet, ipv4
This module holds no tests; pytest collects it and finds none.
"""

from __future__ import annotations

import json

CPU_PORT = 64


def _f(header: str, field: str) -> dict:
    return {"type": "field", "value": [header, field]}


def _hex(v: int) -> dict:
    return {"type": "hexstr", "value": hex(v)}


def _rt(i: int) -> dict:
    return {"type": "runtime_data", "value": i}


def _assign(dst: dict, src: dict) -> dict:
    return {"op": "assign", "parameters": [dst, src]}


def _valid(header: str) -> dict:
    return {"type": "expression",
            "value": {"op": "d2b", "left": None, "right": _f(header, "$valid$")}}


STD_META = [
    ["ingress_port", 9, False], ["egress_spec", 9, False], ["egress_port", 9, False],
    ["instance_type", 32, False], ["packet_length", 32, False], ["enq_timestamp", 32, False],
    ["enq_qdepth", 19, False], ["deq_timedelta", 32, False], ["deq_qdepth", 19, False],
    ["ingress_global_timestamp", 48, False], ["egress_global_timestamp", 48, False],
    ["mcast_grp", 16, False], ["egress_rid", 16, False], ["checksum_error", 1, False],
    ["parser_error", 32, False], ["priority", 3, False], ["_padding", 3, False],
]

IPV4 = [["version", 4, False], ["ihl", 4, False], ["diffserv", 8, False],
        ["totalLen", 16, False], ["identification", 16, False], ["flags", 3, False],
        ["fragOffset", 13, False], ["ttl", 8, False], ["protocol", 8, False],
        ["hdrChecksum", 16, False], ["srcAddr", 32, False], ["dstAddr", 32, False]]

# action ids in the JSON
A_NOACTION, A_DROP, A_FWD, A_SET_NHOP, A_TO_CPU, A_LEARN, A_MCAST, A_REMEMBER, A_SEND_OUT = range(9)

ACTIONS = [
    {"name": "NoAction", "id": A_NOACTION, "runtime_data": [], "primitives": []},
    {"name": "MyIngress.drop", "id": A_DROP, "runtime_data": [], "primitives": [
        {"op": "mark_to_drop", "parameters": [{"type": "header", "value": "standard_metadata"}]}]},
    {"name": "MyIngress.fwd", "id": A_FWD, "runtime_data": [{"name": "port", "bitwidth": 9}],
     "primitives": [
         _assign(_f("standard_metadata", "egress_spec"), _rt(0)),
         {"op": "count", "parameters": [{"type": "counter_array", "value": "MyIngress.c_ingress"},
                                        _rt(0)]}]},
    {"name": "MyIngress.set_nhop", "id": A_SET_NHOP,
     "runtime_data": [{"name": "dmac", "bitwidth": 48}, {"name": "port", "bitwidth": 9}],
     "primitives": [_assign(_f("ethernet", "dstAddr"), _rt(0)),
                    _assign(_f("standard_metadata", "egress_spec"), _rt(1))]},
    {"name": "MyIngress.to_cpu", "id": A_TO_CPU, "runtime_data": [], "primitives": [
        _assign(_f("standard_metadata", "egress_spec"), _hex(CPU_PORT)),
        {"op": "add_header", "parameters": [{"type": "header", "value": "packet_in"}]},
        _assign(_f("packet_in", "ingress_port"), _f("standard_metadata", "ingress_port"))]},
    {"name": "MyIngress.learn", "id": A_LEARN, "runtime_data": [], "primitives": [
        {"op": "generate_digest", "parameters": [_hex(1), _hex(1)]}]},
    {"name": "MyIngress.mcast", "id": A_MCAST, "runtime_data": [{"name": "grp", "bitwidth": 16}],
     "primitives": [_assign(_f("standard_metadata", "mcast_grp"), _rt(0))]},
    {"name": "MyIngress.remember", "id": A_REMEMBER,
     "runtime_data": [{"name": "idx", "bitwidth": 3}],
     "primitives": [{"op": "register_write", "parameters": [
         {"type": "register_array", "value": "MyIngress.r_last"}, _rt(0),
         _f("ipv4", "srcAddr")]}]},
    {"name": "MyIngress.send_out", "id": A_SEND_OUT, "runtime_data": [], "primitives": [
        _assign(_f("standard_metadata", "egress_spec"), _f("packet_out", "egress_port")),
        {"op": "remove_header", "parameters": [{"type": "header", "value": "packet_out"}]}]},
]


def _table(name: str, tid: int, key: list, match_type: str, action_ids: list[int],
           nxt: str | None, default: int, const_default: bool = False,
           counters: bool = False) -> dict:
    names = [ACTIONS[i]["name"] for i in action_ids]
    return {
        "name": name, "id": tid, "key": key, "match_type": match_type, "type": "simple",
        "max_size": 64, "with_counters": counters, "support_timeout": False,
        "direct_meters": None, "action_ids": action_ids, "actions": names,
        "base_default_next": nxt, "next_tables": {n: nxt for n in names},
        "default_entry": {"action_id": default, "action_const": const_default,
                          "action_data": [], "action_entry_const": False},
    }


def _key(match_type: str, header: str, field: str) -> dict:
    return {"match_type": match_type, "name": f"hdr.{header}.{field}",
            "target": [header, field], "mask": None}


def bmv2_json() -> dict:
    tables = [
        _table("MyIngress.tbl_send_out", 0, [], "exact", [A_SEND_OUT], None, A_SEND_OUT,
               const_default=True),
        _table("MyIngress.t_exact", 1, [_key("exact", "ethernet", "dstAddr")], "exact",
               [A_FWD, A_DROP, A_NOACTION], "node_ipv4", A_NOACTION, counters=True),
        _table("MyIngress.t_lpm", 2, [_key("lpm", "ipv4", "dstAddr")], "lpm",
               [A_SET_NHOP, A_NOACTION], "MyIngress.t_tern", A_NOACTION, const_default=True),
        _table("MyIngress.t_tern", 3, [_key("ternary", "ipv4", "srcAddr"),
                                       _key("exact", "ipv4", "protocol")], "ternary",
               [A_TO_CPU, A_LEARN, A_MCAST, A_REMEMBER, A_NOACTION], None, A_NOACTION),
    ]
    conditionals = [
        {"name": "node_out", "id": 0, "expression": _valid("packet_out"),
         "true_next": "MyIngress.tbl_send_out", "false_next": "MyIngress.t_exact"},
        {"name": "node_ipv4", "id": 1, "expression": _valid("ipv4"),
         "true_next": "MyIngress.t_lpm", "false_next": None},
    ]
    hdr = [["scalars_0", []], ["standard_metadata", STD_META],
           ["ethernet_t", [["dstAddr", 48, False], ["srcAddr", 48, False],
                           ["etherType", 16, False]]],
           ["ipv4_t", IPV4],
           ["packet_in_t", [["ingress_port", 9, False], ["_pad", 7, False]]],
           ["packet_out_t", [["egress_port", 9, False], ["_pad", 7, False]]]]
    instances = [("scalars", "scalars_0", True), ("standard_metadata", "standard_metadata", True),
                 ("ethernet", "ethernet_t", False), ("ipv4", "ipv4_t", False),
                 ("packet_in", "packet_in_t", False), ("packet_out", "packet_out_t", False)]

    def state(name: str, sid: int, extract: str | None, key: list, transitions: list) -> dict:
        ops = ([{"parameters": [{"type": "regular", "value": extract}], "op": "extract"}]
               if extract else [])
        return {"name": name, "id": sid, "parser_ops": ops, "transition_key": key,
                "transitions": transitions}

    default = {"type": "default", "value": None, "mask": None}
    parser_states = [
        state("start", 0, None, [_f("standard_metadata", "ingress_port")],
              [{"type": "hexstr", "value": "0x0040", "mask": None,
                "next_state": "parse_packet_out"},
               {**default, "next_state": "parse_ethernet"}]),
        state("parse_packet_out", 1, "packet_out", [], [{**default,
                                                         "next_state": "parse_ethernet"}]),
        state("parse_ethernet", 2, "ethernet", [_f("ethernet", "etherType")],
              [{"type": "hexstr", "value": "0x0800", "mask": None, "next_state": "parse_ipv4"},
               {**default, "next_state": None}]),
        state("parse_ipv4", 3, "ipv4", [], [{**default, "next_state": None}]),
    ]
    return {
        "header_types": [{"name": n, "id": i, "fields": f} for i, (n, f) in enumerate(hdr)],
        "headers": [{"name": n, "id": i, "header_type": t, "metadata": m, "pi_omit": True}
                    for i, (n, t, m) in enumerate(instances)],
        "header_stacks": [], "header_union_types": [], "header_unions": [],
        "header_union_stacks": [], "field_lists": [],
        "errors": [["NoError", 0], ["PacketTooShort", 1], ["NoMatch", 2],
                   ["StackOutOfBounds", 3], ["HeaderTooShort", 4], ["ParserTimeout", 5],
                   ["ParserInvalidArgument", 6]],
        "enums": [],
        "parsers": [{"name": "parser", "id": 0, "init_state": "start",
                     "parse_states": parser_states}],
        "parse_vsets": [],
        "deparsers": [{"name": "deparser", "id": 0, "order": ["packet_in", "ethernet", "ipv4"],
                       "primitives": []}],
        "meter_arrays": [{"name": "MyIngress.m_in", "id": 0, "is_direct": False, "size": 4,
                          "rate_count": 2, "type": "bytes"}],
        "counter_arrays": [
            {"name": "MyIngress.c_ingress", "id": 0, "is_direct": False, "size": 16},
            {"name": "MyIngress.dc_exact", "id": 1, "is_direct": True,
             "binding": "MyIngress.t_exact"}],
        "register_arrays": [{"name": "MyIngress.r_last", "id": 0, "bitwidth": 32, "size": 8}],
        "calculations": [],
        "learn_lists": [{"id": 1, "name": "learn_t", "elements": [
            _f("ethernet", "srcAddr"), _f("standard_metadata", "ingress_port")]}],
        "actions": ACTIONS,
        "pipelines": [
            {"name": "ingress", "id": 0, "init_table": "node_out", "tables": tables,
             "action_profiles": [], "conditionals": conditionals},
            {"name": "egress", "id": 1, "init_table": None, "tables": [],
             "action_profiles": [], "conditionals": []}],
        "checksums": [], "force_arith": [], "extern_instances": [],
        "field_aliases": [["queueing_metadata.enq_timestamp", ["standard_metadata",
                                                                "enq_timestamp"]]],
        "program": "p4rt_test.p4",
        "__meta__": {"version": [2, 23], "compiler": "hand-written for softnic tests"},
    }


def bmv2_json_bytes() -> bytes:
    return json.dumps(bmv2_json(), indent=1).encode()


# P4Info ids
T_EXACT, T_LPM, T_TERN = 0x02000001, 0x02000002, 0x02000003
ACT_NOACTION, ACT_DROP, ACT_FWD, ACT_SET_NHOP = 0x01000001, 0x01000002, 0x01000003, 0x01000004
ACT_TO_CPU, ACT_LEARN, ACT_MCAST, ACT_REMEMBER = 0x01000005, 0x01000006, 0x01000007, 0x01000008
C_INGRESS, DC_EXACT, M_IN, R_LAST, D_LEARN = 0x12000001, 0x13000001, 0x14000001, 0x16000001, \
    0x17000001
CPM_IN, CPM_OUT = 0x04000001, 0x04000002

P4INFO_TXT = f"""
pkg_info {{ arch: "v1model" }}
tables {{
  preamble {{ id: {T_EXACT} name: "MyIngress.t_exact" alias: "t_exact" }}
  match_fields {{ id: 1 name: "hdr.ethernet.dstAddr" bitwidth: 48 match_type: EXACT }}
  action_refs {{ id: {ACT_FWD} }}
  action_refs {{ id: {ACT_DROP} }}
  action_refs {{ id: {ACT_NOACTION} }}
  direct_resource_ids: {DC_EXACT}
  size: 64
}}
tables {{
  preamble {{ id: {T_LPM} name: "MyIngress.t_lpm" alias: "t_lpm" }}
  match_fields {{ id: 1 name: "hdr.ipv4.dstAddr" bitwidth: 32 match_type: LPM }}
  action_refs {{ id: {ACT_SET_NHOP} }}
  action_refs {{ id: {ACT_NOACTION} }}
  const_default_action_id: {ACT_NOACTION}
  size: 64
}}
tables {{
  preamble {{ id: {T_TERN} name: "MyIngress.t_tern" alias: "t_tern" }}
  match_fields {{ id: 1 name: "hdr.ipv4.srcAddr" bitwidth: 32 match_type: TERNARY }}
  match_fields {{ id: 2 name: "hdr.ipv4.protocol" bitwidth: 8 match_type: EXACT }}
  action_refs {{ id: {ACT_TO_CPU} }}
  action_refs {{ id: {ACT_LEARN} }}
  action_refs {{ id: {ACT_MCAST} }}
  action_refs {{ id: {ACT_REMEMBER} }}
  action_refs {{ id: {ACT_NOACTION} }}
  size: 64
}}
actions {{ preamble {{ id: {ACT_NOACTION} name: "NoAction" alias: "NoAction" }} }}
actions {{ preamble {{ id: {ACT_DROP} name: "MyIngress.drop" alias: "drop" }} }}
actions {{
  preamble {{ id: {ACT_FWD} name: "MyIngress.fwd" alias: "fwd" }}
  params {{ id: 1 name: "port" bitwidth: 9 }}
}}
actions {{
  preamble {{ id: {ACT_SET_NHOP} name: "MyIngress.set_nhop" alias: "set_nhop" }}
  params {{ id: 1 name: "dmac" bitwidth: 48 }}
  params {{ id: 2 name: "port" bitwidth: 9 }}
}}
actions {{ preamble {{ id: {ACT_TO_CPU} name: "MyIngress.to_cpu" alias: "to_cpu" }} }}
actions {{ preamble {{ id: {ACT_LEARN} name: "MyIngress.learn" alias: "learn" }} }}
actions {{
  preamble {{ id: {ACT_MCAST} name: "MyIngress.mcast" alias: "mcast" }}
  params {{ id: 1 name: "grp" bitwidth: 16 }}
}}
actions {{
  preamble {{ id: {ACT_REMEMBER} name: "MyIngress.remember" alias: "remember" }}
  params {{ id: 1 name: "idx" bitwidth: 3 }}
}}
counters {{
  preamble {{ id: {C_INGRESS} name: "MyIngress.c_ingress" alias: "c_ingress" }}
  spec {{ unit: BOTH }}
  size: 16
}}
direct_counters {{
  preamble {{ id: {DC_EXACT} name: "MyIngress.dc_exact" alias: "dc_exact" }}
  spec {{ unit: BOTH }}
  direct_table_id: {T_EXACT}
}}
meters {{
  preamble {{ id: {M_IN} name: "MyIngress.m_in" alias: "m_in" }}
  spec {{ unit: BYTES }}
  size: 4
}}
controller_packet_metadata {{
  preamble {{ id: {CPM_IN} name: "packet_in" alias: "packet_in"
              annotations: "@controller_header(\\"packet_in\\")" }}
  metadata {{ id: 1 name: "ingress_port" bitwidth: 9 }}
  metadata {{ id: 2 name: "_pad" bitwidth: 7 }}
}}
controller_packet_metadata {{
  preamble {{ id: {CPM_OUT} name: "packet_out" alias: "packet_out"
              annotations: "@controller_header(\\"packet_out\\")" }}
  metadata {{ id: 1 name: "egress_port" bitwidth: 9 }}
  metadata {{ id: 2 name: "_pad" bitwidth: 7 }}
}}
registers {{
  preamble {{ id: {R_LAST} name: "MyIngress.r_last" alias: "r_last" }}
  type_spec {{ bitstring {{ bit {{ bitwidth: 32 }} }} }}
  size: 8
}}
digests {{
  preamble {{ id: {D_LEARN} name: "learn_t" alias: "learn_t" }}
  type_spec {{ struct {{ name: "learn_t" }} }}
}}
type_info {{
  structs {{
    key: "learn_t"
    value {{
      members {{ name: "srcAddr" type_spec {{ bitstring {{ bit {{ bitwidth: 48 }} }} }} }}
      members {{ name: "port" type_spec {{ bitstring {{ bit {{ bitwidth: 9 }} }} }} }}
    }}
  }}
}}
"""


def p4info():
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2

    return text_format.Parse(P4INFO_TXT, p4info_pb2.P4Info())


# -- a raw P4Runtime client over real gRPC, for what p4runtime-shell cannot express

class Client:
    """One controller: a channel, a StreamChannel with its receive queue, and unary helpers."""

    def __init__(self, addr: str, device_id: int = 0, election_id: tuple[int, int] = (0, 1),
                 arbitrate: bool = True) -> None:
        import queue
        import threading

        import grpc
        from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

        self.pb = p4runtime_pb2
        self.device_id = device_id
        self.election_id = election_id
        self.channel = grpc.insecure_channel(addr)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._out: queue.Queue = queue.Queue()
        self.received: queue.Queue = queue.Queue()
        self.other: list = []

        def requests():
            while True:
                m = self._out.get()
                if m is None:
                    return
                yield m

        self.stream = self.stub.StreamChannel(requests())

        def pump() -> None:
            try:
                for m in self.stream:
                    self.received.put(m)
            except grpc.RpcError as e:
                self.received.put(e)

        self._thread = threading.Thread(target=pump, daemon=True)
        self._thread.start()
        if arbitrate:
            self.arbitrate(election_id)

    def send(self, msg) -> None:
        self._out.put(msg)

    def arbitrate(self, election_id: tuple[int, int]):
        self.election_id = election_id
        req = self.pb.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.high, req.arbitration.election_id.low = election_id
        self.send(req)
        return self.next("arbitration")

    def next(self, kind: str, timeout: float = 5.0):
        """The next stream message of ``kind`` (others are kept in ``self.other``)."""
        import queue
        import time

        deadline = time.monotonic() + timeout
        while True:
            try:
                m = self.received.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return None
            if isinstance(m, Exception):
                raise m
            if m.WhichOneof("update") == kind:
                return m
            self.other.append(m)

    def set_pipeline(self, device_config: bytes | None = None, action=None, cookie=None,
                     p4info_msg=None):
        req = self.pb.SetForwardingPipelineConfigRequest(device_id=self.device_id)
        req.election_id.high, req.election_id.low = self.election_id
        req.action = action if action is not None else req.VERIFY_AND_COMMIT
        req.config.p4info.CopyFrom(p4info_msg if p4info_msg is not None else p4info())
        req.config.p4_device_config = (device_config if device_config is not None
                                       else bmv2_json_bytes())
        if cookie is not None:
            req.config.cookie.cookie = cookie
        return self.stub.SetForwardingPipelineConfig(req)

    def write(self, *updates, election_id: tuple[int, int] | None = None):
        req = self.pb.WriteRequest(device_id=self.device_id)
        req.election_id.high, req.election_id.low = election_id or self.election_id
        req.updates.extend(updates)
        return self.stub.Write(req)

    def read(self, *entities) -> list:
        req = self.pb.ReadRequest(device_id=self.device_id)
        req.entities.extend(entities)
        out = []
        for resp in self.stub.Read(req):
            out.extend(resp.entities)
        return out

    def close(self) -> None:
        self._out.put(None)
        self.channel.close()


def update(kind: str, entity_field: str, msg):
    """An Update of type ``kind`` (INSERT/MODIFY/DELETE) for ``entity.<entity_field> = msg``."""
    from p4.v1 import p4runtime_pb2

    u = p4runtime_pb2.Update(type=getattr(p4runtime_pb2.Update, kind))
    getattr(u.entity, entity_field).CopyFrom(msg)
    return u


def write_errors(exc) -> list:
    """The per-update ``p4.v1.Error`` list of a failed Write (status UNKNOWN with details)."""
    from google.rpc import status_pb2
    from p4.v1 import p4runtime_pb2

    details = dict(exc.trailing_metadata()).get("grpc-status-details-bin")
    assert details is not None, f"no error details in {exc}"
    status = status_pb2.Status.FromString(details)
    errors = []
    for any_msg in status.details:
        err = p4runtime_pb2.Error()
        assert any_msg.Unpack(err)
        errors.append(err)
    return errors


def make_switch():
    """The real engine, constructed the way ``softnic run`` does (cpu port if it takes one)."""
    import inspect

    from softnic.runtime.switch import Switch

    params = inspect.signature(Switch).parameters
    return Switch(cpu_port=CPU_PORT) if "cpu_port" in params else Switch()
