"""Idle timeouts of table entries (P4Runtime: ``idle_timeout_ns``, IdleTimeoutNotification).

For a table whose P4Info has ``idle_timeout_behavior: NOTIFY_CONTROL`` (p4c: ``support_timeout =
true``) an entry may carry ``idle_timeout_ns``. The engine time-stamps each hit of such an entry
(:meth:`softnic.runtime.match_tables.Table.enable_ageing`); a sweeper thread wakes every
``interval_s`` (BMv2's AgeingMonitor sweeps every 1000 ms by default) and, for each such table,
reports the entries whose idle time has passed their timeout in one IdleTimeoutNotification to
the primary client. As in BMv2, an entry is reported once per expiry (it is reported again only
after a hit has made it live again) and is never deleted: the controller decides. A sweep costs
one pass over the entries that have a timeout (the engine indexes them per table: the other
entries are never looked at), taking the switch lock for at most SWEEP_CHUNK entries at a time;
the packet path does no sweeping. The engine calls are those of
:class:`softnic.runtime.ageing.IdleTimeoutControl`.

The notification's entries carry the table id, match, priority and ``idle_timeout_ns``: what a
controller needs to delete them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from p4.v1 import p4runtime_pb2

from softnic.runtime.ageing import Expired, IdleTimeoutControl
from softnic.runtime.api import SwitchAPI

from . import translate
from .errors import unimplemented
from .p4info import P4InfoIndex

log = logging.getLogger("softnic.p4rt")

Send = Callable[[p4runtime_pb2.StreamMessageResponse], bool]

SWEEP_CHUNK = 1024  # entries examined per hold of the switch lock


def ageing(switch: SwitchAPI) -> IdleTimeoutControl:
    """The engine's idle-timeout calls; the SwitchAPI has none, so an engine without
    :class:`IdleTimeoutControl` (softnic's in-process Switch has it) is refused."""
    if not isinstance(switch, IdleTimeoutControl):
        raise unimplemented("idle timeouts need softnic's in-process switch")
    return switch


def time_since_last_hit_ns(last_hit: float, now: float) -> int:
    return max(0, int((now - last_hit) * 1e9))


class IdleSweeper:
    """The sweeper thread of one P4Runtime service."""

    def __init__(self, switch: SwitchAPI, send: Send, interval_s: float = 1.0) -> None:
        self.switch = switch
        self.send = send
        self.interval_s = interval_s
        self.index: P4InfoIndex | None = None
        self.notifications = 0  # sent (or offered) IdleTimeoutNotifications
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="p4rt-idle-sweeper", daemon=True)
        self._thread.start()

    def reset(self, index: P4InfoIndex | None) -> None:
        """A new pipeline: its tables are swept from now on (its entries start empty)."""
        self.index = index

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.sweep()
            except Exception:  # a bug here must not end the sweeps
                log.exception("idle-timeout sweep failed")

    def sweep(self, now: float | None = None) -> list[p4runtime_pb2.IdleTimeoutNotification]:
        """One sweep; returns the notifications it sent (one per table with newly idle entries)."""
        index = self.index
        if index is None:
            return []
        sent = []
        for t in index.tables.values():
            if not t.supports_timeout or not t.in_json:
                continue
            expired: list[Expired] = []
            try:
                eng = ageing(self.switch)
                timed = eng.table_timed_entries(t.name)  # only the entries with a timeout
                # the switch lock is taken per chunk, so packets wait at most one chunk
                for i in range(0, len(timed), SWEEP_CHUNK):
                    expired += eng.table_sweep_idle(t.name, timed[i:i + SWEEP_CHUNK], now)
            except Exception:  # the pipeline changed under us: the next sweep sees the new one
                continue
            if not expired:
                continue
            msg = p4runtime_pb2.StreamMessageResponse()
            note = msg.idle_timeout_notification
            note.timestamp = time.time_ns()
            for key, priority, idle_ns in expired:
                out = note.table_entry.add(table_id=t.id, priority=priority,
                                           idle_timeout_ns=idle_ns)
                translate.encode_key(t, key, out)
            self.send(msg)
            self.notifications += 1
            sent.append(note)
        return sent
