"""Linearizability checking of memcached histories: record them (history), check them (check)
with the porcupine-based p4cache-lincheck binary (tools/lincheck, docs/lincheck.md)."""

from p4cache.lincheck.check import (
    KeyResult,
    LincheckError,
    LincheckNotBuilt,
    Verdict,
    check_history,
    check_ops,
    find_binary,
)
from p4cache.lincheck.history import (
    HistoryRecorder,
    Op,
    PendingOp,
    read_history,
    write_history,
)

__all__ = [
    "HistoryRecorder",
    "KeyResult",
    "LincheckError",
    "LincheckNotBuilt",
    "Op",
    "PendingOp",
    "Verdict",
    "check_history",
    "check_ops",
    "find_binary",
    "read_history",
    "write_history",
]
