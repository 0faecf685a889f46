"""Histories of memcached operations as JSON lines, the input of p4cache-lincheck.

One line per operation (docs/lincheck.md):
{"client":3,"key":"k1","op":"get"|"set"|"delete","value":"v"|null,"ttl":0,
 "call":<ns>,"return":<ns>|null,"result":"v"|null|"ok"|"not_found"|"unknown"|"error"}
Times are time.monotonic_ns() of one machine: comparable across threads of one process.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

OpName = Literal["get", "set", "delete"]
UNKNOWN = "unknown"  # the reply never came or cannot be trusted: the write may or may not be done
ERROR = "error"  # an error reply: for the checker, also an unknown outcome


@dataclass(frozen=True)
class Op:
    """One operation of a history. ret None: it never completed (outcome unknown).
    result: get -> the value, or None for a miss; set -> "ok"; delete -> "ok" | "not_found";
    any op -> "unknown" | "error" when its outcome is not known."""

    client: int
    key: str
    op: OpName
    call: int
    ret: int | None
    result: str | None
    value: str | None = None
    ttl: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "client": self.client,
            "key": self.key,
            "op": self.op,
            "value": self.value,
            "ttl": self.ttl,
            "call": self.call,
            "return": self.ret,
            "result": self.result,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Op:
        return cls(
            client=int(d.get("client", 0)),
            key=d["key"],
            op=d["op"],
            call=int(d["call"]),
            ret=None if d.get("return") is None else int(d["return"]),
            result=d.get("result"),
            value=d.get("value"),
            ttl=int(d.get("ttl") or 0),
        )


def write_history(ops: Iterable[Op], path: str | Path) -> int:
    """Write ops as JSON lines; returns how many."""
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for op in ops:
            f.write(json.dumps(op.to_json(), separators=(",", ":")) + "\n")
            n += 1
    return n


def read_history(path: str | Path) -> list[Op]:
    with open(path, encoding="utf-8") as f:
        return [Op.from_json(json.loads(line)) for line in f if line.strip()]


@dataclass(frozen=True)
class PendingOp:
    """An operation that has been called and has not returned yet."""

    id: int
    client: int
    key: str
    op: OpName
    call: int
    value: str | None
    ttl: int


class HistoryRecorder:
    """Records operations from many threads into a JSON-lines file.

        rec = HistoryRecorder("h.jsonl")
        p = rec.begin(client=1, op="set", key="k", value="v", ttl=0)   # clock read here
        ...send it, wait for the reply...
        rec.end(p, "ok")                 # clock read here; rec.end(p, None) = a get's miss
        rec.unknown(p)                   # instead of end(): timed out / connection lost
        rec.close()                      # ops still pending are written with "return": null

    Each completed op is written (and flushed) at once, so a crash loses only pending ones.
    """

    def __init__(self, path: str | Path, clock: Callable[[], int] = time.monotonic_ns) -> None:
        self.path = Path(path)
        self._clock = clock
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._pending: dict[int, PendingOp] = {}
        self._file: IO[str] | None = open(self.path, "w", encoding="utf-8")
        self.count = 0

    def begin(
        self, client: int, op: OpName, key: str, value: str | None = None, ttl: int = 0
    ) -> PendingOp:
        if op == "set" and value is None:
            raise ValueError("a set needs a value")
        p = PendingOp(next(self._ids), client, key, op, self._clock(), value, ttl)
        with self._lock:
            self._pending[p.id] = p
        return p

    def end(self, pending: PendingOp, result: str | None) -> Op:
        """The reply came: result as in Op (None = a get's miss)."""
        return self._finish(pending, self._clock(), result)

    def unknown(self, pending: PendingOp, result: str = UNKNOWN) -> Op:
        """No usable reply (timeout, error, lost connection): the outcome is unknown."""
        if result not in (UNKNOWN, ERROR):
            raise ValueError(f"unknown() result must be {UNKNOWN!r} or {ERROR!r}")
        return self._finish(pending, self._clock(), result)

    def _finish(self, p: PendingOp, ret: int | None, result: str | None) -> Op:
        op = Op(p.client, p.key, p.op, p.call, ret, result, p.value, p.ttl)
        line = json.dumps(op.to_json(), separators=(",", ":")) + "\n"
        with self._lock:
            if self._pending.pop(p.id, None) is None:
                raise ValueError(f"operation {p.id} already finished")
            if self._file is None:
                raise ValueError("recorder is closed")
            self._file.write(line)
            self._file.flush()
            self.count += 1
        return op

    def close(self) -> None:
        """Write every still pending op as never completed, then close the file."""
        with self._lock:
            pending = list(self._pending.values())
        for p in pending:
            self._finish(p, None, UNKNOWN)
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def __enter__(self) -> HistoryRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
