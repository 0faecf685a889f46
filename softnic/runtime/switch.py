"""``Switch``: the v1model (simple_switch) execution engine behind ``softnic run``.

It implements :class:`softnic.runtime.api.SwitchAPI` and is put together from one mixin per
job: ``control`` (pipeline load, tables, externs, PRE), ``datapath`` (the packet path; its
docstring lists the choices made where BMv2 leaves room), ``tm`` (clones, digests, packet-ins)
and ``diag`` (engine errors, tracing). ``build`` and ``pipeline`` turn JSON into the node graph.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from softnic.runtime.ageing import IdleTimeoutControl
from softnic.runtime.api import Digest, PacketIn
from softnic.runtime.codegen import DROP_PORT
from softnic.runtime.control_plane import ControlPlane
from softnic.runtime.datapath import MAX_COPIES, MAX_PASSES, Datapath
from softnic.runtime.diag import ENGINE_ERROR_LOG_INTERVAL, Diagnostics, SwitchStats, log
from softnic.runtime.parse_vsets import ValueSetControl
from softnic.runtime.pipeline import ActionCallNode, CondNode, Pipeline, TableNode
from softnic.runtime.pre import PacketReplicationEngine
from softnic.runtime.tm import TrafficManager

__all__ = ["ENGINE_ERROR_LOG_INTERVAL", "MAX_COPIES", "MAX_PASSES", "ActionCallNode", "CondNode",
           "Pipeline", "Switch", "SwitchStats", "TableNode", "log"]


class Switch(ControlPlane, ValueSetControl, IdleTimeoutControl, Datapath, TrafficManager,
             Diagnostics):
    """One v1model switch: its state lives here, its behaviour in the mixins."""

    def __init__(self, cpu_port: int | None = None,
                 trace: Callable[[str], None] | None = None, drop_port: int = DROP_PORT,
                 device_id: int = 0) -> None:
        self.cpu_port = cpu_port
        self.drop_port = drop_port
        self.device_id = device_id
        self._trace = trace
        self._lock = threading.Lock()
        self._p: Pipeline | None = None
        self._pre = PacketReplicationEngine()
        self._packet_in_cb: Callable[[PacketIn], None] | None = None
        self._digest_cb: Callable[[Digest], None] | None = None
        self._ctrl_in: str | None = None
        self._ctrl_out: str | None = None
        self._ctrl_explicit = False
        self._t0 = time.monotonic()
        self._pkt_id = 0
        self.stats = SwitchStats()
        self._rx_port = 0
