"""Per-packet trace lines in the spirit of BMv2's ``--log-console``.

A :class:`Tracer` is created only when the switch has a trace callback, so packets pay nothing
for tracing when it is off. Lines look like BMv2's: ``[pkt 3] Applying table 'MyIngress.t'``.
"""

from __future__ import annotations

from collections.abc import Callable


class Tracer:
    __slots__ = ("sink", "prefix")

    def __init__(self, sink: Callable[[str], None], pkt_id: int) -> None:
        self.sink = sink
        self.prefix = f"[pkt {pkt_id}] "

    def __call__(self, line: str) -> None:
        self.sink(self.prefix + line)
