"""Write and Read of index-addressed externs: CounterEntry, MeterEntry, RegisterEntry.

All three are fixed-size arrays, so they are only MODIFYed (INSERT/DELETE are INVALID_ARGUMENT);
an index past the array is OUT_OF_RANGE; an unset index addresses every cell (wildcard read, and
a write to all cells, as the spec allows for counters and meters). Registers are supported for
reads and writes, which BMv2's server lacks (p4lang/PI#376) - a deliberate superset.
"""

from __future__ import annotations

from collections.abc import Iterator

from p4.v1 import p4runtime_pb2

from softnic.runtime.api import SwitchAPI

from . import bytestr
from .engine import engine_errors
from .errors import invalid, out_of_range
from .p4info import IndexedInfo, P4InfoIndex

Update = p4runtime_pb2.Update


def _indices(info: IndexedInfo, msg, kind: str) -> range:
    if not msg.HasField("index"):
        return range(info.size)
    i = msg.index.index
    if i < 0 or i >= info.size:
        raise out_of_range(f"{kind} {info.name}: index {i} is outside 0..{info.size - 1}")
    return range(i, i + 1)


def _modify_only(op: int, kind: str) -> None:
    if op != Update.MODIFY:
        raise invalid(f"{kind} entries can only be modified (they always exist)")


class ExternHandler:
    def __init__(self, switch: SwitchAPI, index: P4InfoIndex) -> None:
        self.switch = switch
        self.index = index

    # -- counters
    def write_counter(self, op: int, msg: p4runtime_pb2.CounterEntry) -> None:
        _modify_only(op, "counter")
        info = self.index.counter(msg.counter_id)
        for i in _indices(info, msg, "counter"):
            with engine_errors(f"write counter {info.name}[{i}]"):
                self.switch.counter_write(info.name, i, msg.data.packet_count,
                                          msg.data.byte_count)

    def read_counter(self, req: p4runtime_pb2.CounterEntry) -> Iterator[p4runtime_pb2.Entity]:
        infos = (list(self.index.counters.values()) if req.counter_id == 0
                 else [self.index.counter(req.counter_id)])
        for info in infos:
            for i in _indices(info, req, "counter"):
                with engine_errors(f"read counter {info.name}[{i}]"):
                    packets, nbytes = self.switch.counter_read(info.name, i)
                ent = p4runtime_pb2.Entity()
                c = ent.counter_entry
                c.counter_id = info.id
                c.index.index = i
                c.data.packet_count = packets
                c.data.byte_count = nbytes
                yield ent

    # -- meters
    def write_meter(self, op: int, msg: p4runtime_pb2.MeterEntry) -> None:
        _modify_only(op, "meter")
        info = self.index.meter(msg.meter_id)
        c = msg.config
        config = (c.cir, c.cburst, c.pir, c.pburst) if msg.HasField("config") else None
        if config is not None and (c.cir > c.pir or min(config) < 0):
            raise invalid(f"meter {info.name}: committed rate must not exceed peak rate")
        for i in _indices(info, msg, "meter"):
            with engine_errors(f"write meter {info.name}[{i}]"):
                # An unset config resets the cell to "not configured" (every packet green).
                self.switch.meter_set(info.name, i, config)  # type: ignore[arg-type]

    def read_meter(self, req: p4runtime_pb2.MeterEntry) -> Iterator[p4runtime_pb2.Entity]:
        infos = (list(self.index.meters.values()) if req.meter_id == 0
                 else [self.index.meter(req.meter_id)])
        for info in infos:
            for i in _indices(info, req, "meter"):
                with engine_errors(f"read meter {info.name}[{i}]"):
                    config = self.switch.meter_get(info.name, i)
                ent = p4runtime_pb2.Entity()
                m = ent.meter_entry
                m.meter_id = info.id
                m.index.index = i
                if config is not None:
                    m.config.cir, m.config.cburst, m.config.pir, m.config.pburst = config
                yield ent

    # -- registers
    def write_register(self, op: int, msg: p4runtime_pb2.RegisterEntry) -> None:
        _modify_only(op, "register")
        info = self.index.register(msg.register_id)
        if msg.data.WhichOneof("data") != "bitstring":
            raise invalid(f"register {info.name}: data must be a bitstring")
        width = info.bitwidth or 64
        value = bytestr.decode(msg.data.bitstring, width, f"register {info.name}")
        for i in _indices(info, msg, "register"):
            with engine_errors(f"write register {info.name}[{i}]"):
                self.switch.register_write(info.name, i, value)

    def read_register(self, req: p4runtime_pb2.RegisterEntry) -> Iterator[p4runtime_pb2.Entity]:
        infos = (list(self.index.registers.values()) if req.register_id == 0
                 else [self.index.register(req.register_id)])
        for info in infos:
            for i in _indices(info, req, "register"):
                with engine_errors(f"read register {info.name}[{i}]"):
                    value = self.switch.register_read(info.name, i)
                ent = p4runtime_pb2.Entity()
                r = ent.register_entry
                r.register_id = info.id
                r.index.index = i
                r.data.bitstring = bytestr.encode(value)
                yield ent
