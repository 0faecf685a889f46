"""Counters and latency percentiles of the agent (the control channel's ``status``)."""

from __future__ import annotations

from collections import Counter, deque


class Latency:
    """The last ``keep`` samples (seconds) of one kind, and how many there were in all."""

    def __init__(self, keep: int = 4096) -> None:
        self.samples: deque[float] = deque(maxlen=keep)
        self.count = 0

    def add(self, seconds: float) -> None:
        self.samples.append(seconds)
        self.count += 1

    def summary(self) -> dict[str, float | int | None]:
        s = sorted(self.samples)
        if not s:
            return {"n": 0, "p50_us": None, "p99_us": None, "max_us": None}

        def pick(q: float) -> float:
            return round(s[min(len(s) - 1, int(q * len(s)))] * 1e6, 1)

        return {"n": self.count, "p50_us": pick(0.50), "p99_us": pick(0.99),
                "max_us": round(s[-1] * 1e6, 1)}


class Metrics:
    def __init__(self) -> None:
        self.counters: Counter[str] = Counter()
        self.latencies: dict[str, Latency] = {}

    def inc(self, name: str, n: int = 1) -> None:
        self.counters[name] += n

    def observe(self, name: str, seconds: float) -> None:
        lat = self.latencies.get(name)
        if lat is None:
            lat = self.latencies[name] = Latency()
        lat.add(seconds)

    def snapshot(self) -> dict[str, object]:
        return {"counters": dict(sorted(self.counters.items())),
                "latency": {k: v.summary() for k, v in sorted(self.latencies.items())}}
