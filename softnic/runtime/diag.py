"""Engine diagnostics: failure counting and logging, and the traced pipeline walk.

Kept apart from the packet path so the fast path reads as what it is; these run only when a
packet fails or when a trace callback is set.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from time import monotonic

from softnic.runtime.packet import AssertFailed, PacketCtx
from softnic.runtime.pipeline import CondNode, Pipeline, TableNode
from softnic.runtime.trace import Tracer

ENGINE_ERROR_LOG_INTERVAL = 1.0  # seconds between two engine-error warnings in the log
log = logging.getLogger("softnic.switch")


@dataclass
class SwitchStats:
    """Packets the engine could not process; tests assert these stay 0 on any input."""

    engine_errors: int = 0  # unexpected exceptions: softnic bugs
    assert_failures: int = 0  # assert / assume primitives that failed
    last_error: str = ""
    last_warning: float = float("-inf")


class Diagnostics:
    """Mixin of :class:`~softnic.runtime.switch.Switch`: engine errors and tracing."""

    stats: SwitchStats

    def _engine_error(self, e: Exception, port: int, tr: Tracer | None) -> None:
        """Count a packet the engine failed on and say so, at most once per second in the log.

        An ``assert`` primitive that fails is the program's doing (BMv2 aborts the whole
        process), so it is counted apart from real engine errors, which are softnic bugs.
        """
        st = self.stats
        if isinstance(e, AssertFailed):
            st.assert_failures += 1
        else:
            st.engine_errors += 1
        st.last_error = f"{type(e).__name__}: {e}"
        if tr:
            tr(f"Packet dropped: engine error {st.last_error}")
        now = monotonic()
        if now - st.last_warning >= ENGINE_ERROR_LOG_INTERVAL:
            st.last_warning = now
            log.warning("packet from port %d dropped: engine error %s (%d engine errors, "
                        "%d assert failures so far)", port, st.last_error,
                        st.engine_errors, st.assert_failures, exc_info=e)

    def _pipeline(self, p: Pipeline, name: str, f: list[int], s: PacketCtx,
                  tr: Tracer | None) -> None:
        node = p.inits[name]
        if tr is None:
            while node is not None:
                node = node.apply(f, s)
            return
        tr(f"Pipeline '{name}': start")
        logs: list[str] = []
        s.logs = logs
        while node is not None:
            if isinstance(node, TableNode):
                t = node.table
                tr(f"Applying table '{node.name}'")
                tr(f"Looking up key: {t.key_tup(f)}")
                e = t.lookup(f)
                if e is None:
                    d = node.default
                    tr(f"Table '{node.name}': miss")
                    if d is not None:
                        tr(f"Action entry is {self._aname(p, d.aid)} - {d.params}")
                        self._trace_prims(p, d.aid, tr)
                else:
                    tr(f"Table '{node.name}': hit")
                    tr(f"Action entry is {self._aname(p, e.aid)} - {e.params}")
                    self._trace_prims(p, e.aid, tr)
            elif isinstance(node, CondNode):
                tr(f"Condition '{node.name}' is {bool(node.fn(f))}")
            node = node.apply(f, s)
            for m in logs:
                tr(m)
            logs.clear()
        tr(f"Pipeline '{name}': end")

    @staticmethod
    def _aname(p: Pipeline, aid: int) -> str:
        return p.comp.actions[aid].name

    @staticmethod
    def _trace_prims(p: Pipeline, aid: int, tr: Tracer) -> None:
        for line in p.comp.actions[aid].primitives:
            tr(line)
