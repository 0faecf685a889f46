"""Counters and latency percentiles the status server reports."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


class Latency:
    """The last ``size`` samples (seconds); percentiles by nearest rank."""

    def __init__(self, size: int = 2048) -> None:
        self.samples: deque[float] = deque(maxlen=size)
        self.count = 0

    def add(self, seconds: float) -> None:
        self.samples.append(seconds)
        self.count += 1

    def percentile(self, p: float) -> float | None:
        if not self.samples:
            return None
        s = sorted(self.samples)
        rank = max(1, min(len(s), round(p / 100 * len(s) + 0.5)))
        return s[rank - 1]

    def summary(self) -> dict[str, float | int | None]:
        def ms(v: float | None) -> float | None:
            return None if v is None else round(v * 1000, 3)
        return {"count": self.count, "p50_ms": ms(self.percentile(50)),
                "p99_ms": ms(self.percentile(99))}


@dataclass
class Metrics:
    promotions: int = 0          # keys filled into a slot
    refills: int = 0             # of those, refreshes of a key already cached
    refill_asks: int = 0         # digests for a cached key whose slot had stopped answering
    promotions_started: int = 0
    aborted: dict[str, int] = field(default_factory=dict)    # reason -> promotions given up
    evictions: dict[str, int] = field(default_factory=dict)  # reason -> entries removed
    written_retries: int = 0     # fills refused (`written`) and started again
    stale_resyncs: int = 0       # acks `stale` settled with OP_READ
    rejected: int = 0            # digests whose key was not hotter than the coldest slot
    deferred: int = 0            # digests that found max_inflight promotions under way
    probes: int = 0              # counter reads between epochs (a candidate found no victim)
    probed_cold: int = 0         # cached keys those reads found gone cold
    digests: int = 0
    digests_dropped: int = 0     # digest entries dropped with the worker's queue full
    threshold_changes: int = 0   # admission threshold writes to the switch
    flushes_seen: int = 0        # times the switch's flush counter moved
    switch_sessions: int = 0
    promotion_latency: Latency = field(default_factory=Latency)  # digest -> filled
    # The steps of one promotion round, each timed on its own (where a promotion's time goes)
    reserve_latency: Latency = field(default_factory=Latency)    # OP_UPDATE len 0 -> ack
    insert_latency: Latency = field(default_factory=Latency)     # cache_lookup insert
    fetch_latency: Latency = field(default_factory=Latency)      # agent request -> its result
    fill_latency: Latency = field(default_factory=Latency)       # OP_UPDATE with bytes -> ack
    # decision -> slot invalid; for a key evicted for a candidate: its delete at the flush
    eviction_latency: Latency = field(default_factory=Latency)

    def abort(self, reason: str) -> None:
        self.aborted[reason] = self.aborted.get(reason, 0) + 1

    def evicted(self, reason: str) -> None:
        self.evictions[reason] = self.evictions.get(reason, 0) + 1
