"""Idle timeouts of table entries at the engine: the control-plane calls the P4Runtime
service's idle-timeout support (``p4rt/idle.py``) needs, BMv2's ``set_entry_ttl`` and ageing
sweep. A mixin of :class:`~softnic.runtime.switch.Switch`, like ``ValueSetControl``; every call
takes the switch lock.

A table keeps the entries that have a timeout in ``Table.timed`` (updated when a timeout is set
or cleared and when an entry is removed), so a sweep looks at those only, never at the whole
table, and in chunks of at most ``limit`` entries per hold of the lock.
"""

from __future__ import annotations

import time
from typing import Any

from softnic.runtime.api import MatchKey
from softnic.runtime.match_tables import Entry, Table

# (match key, priority, idle_timeout_ns) of an entry found idle: what a notification carries
Expired = tuple[list[MatchKey | None], int, int]


class IdleTimeoutControl:
    """Mixin of :class:`~softnic.runtime.switch.Switch`: per-entry idle timeouts."""

    _lock: Any
    _p: Any

    _table: Any  # ControlPlane._table: the loaded pipeline's table node of that name

    def _ageing_table(self, table: str) -> Table:
        return self._table(table).table

    def table_set_idle_timeout(self, table: str, key: list[MatchKey | None], priority: int,
                               timeout_ns: int, reset: bool) -> None:
        """Give the entry ``key``/``priority`` an idle timeout (0: none); ``reset`` (an
        insert) starts its idle time now."""
        with self._lock:
            t = self._ageing_table(table)
            t.set_idle_timeout(t.find(key, priority), timeout_ns, reset)

    def table_timed_entries(self, table: str) -> list[Entry]:
        """The entries of ``table`` that have an idle timeout now (a snapshot to sweep)."""
        with self._lock:
            return list(self._ageing_table(table).timed.values())

    def table_sweep_idle(self, table: str, entries: list[Entry],
                         now: float | None = None) -> list[Expired]:
        """The newly expired ones among ``entries`` (a chunk of :meth:`table_timed_entries`;
        entries removed since are skipped), as (key, priority, idle_timeout_ns)."""
        with self._lock:
            t = self._ageing_table(table)
            when = time.monotonic() if now is None else now
            return [(list(e.mk), e.priority, e.idle_ns) for e in t.sweep_idle(when, entries)]
