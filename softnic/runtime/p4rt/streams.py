"""One StreamChannel's outgoing side: a bounded queue drained by the RPC's response generator.

Packet-in and digest callbacks run on the engine's packet thread. They must never wait on a slow
or stalled controller, so they only ``offer`` a message here; when a client stops reading and its
queue fills up, further messages for it are dropped and counted (as a NIC drops on a full CPU
queue) rather than blocking the data path.
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Iterator

from p4.v1 import p4runtime_pb2

_ids = itertools.count(1)


class Stream:
    """Outgoing messages of one StreamChannel plus its arbitration state."""

    def __init__(self, maxsize: int = 4096) -> None:
        self.id = next(_ids)
        self._q: queue.Queue[p4runtime_pb2.StreamMessageResponse | None] = queue.Queue(maxsize)
        self._closed = threading.Event()
        self.dropped = 0
        # Set by arbitration once the client has sent its MasterArbitrationUpdate.
        self.role: str | None = None
        self.election_id: tuple[int, int] | None = None

    def offer(self, msg: p4runtime_pb2.StreamMessageResponse) -> bool:
        """Queue ``msg`` without blocking; False (and counted) when the client is not keeping up."""
        if self._closed.is_set():
            return False
        try:
            self._q.put_nowait(msg)
            return True
        except queue.Full:
            self.dropped += 1
            return False

    def close(self) -> None:
        """End the response stream; wakes the generator even when the queue is full."""
        if self._closed.is_set():
            return
        self._closed.set()
        while True:
            try:
                self._q.put_nowait(None)
                return
            except queue.Full:
                try:
                    self._q.get_nowait()
                except queue.Empty:
                    pass

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def responses(self) -> Iterator[p4runtime_pb2.StreamMessageResponse]:
        while True:
            msg = self._q.get()
            if msg is None:
                return
            yield msg
