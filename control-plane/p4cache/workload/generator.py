"""Deterministic workload generation for the benchmarks: which key, which operation, when.

Pure and repeatable: nothing here touches the network or sleeps. Given the same parameters and
seed, every function returns the same values on every run (Python's Mersenne Twister `random()`
and `expovariate()` are stable across versions, and derived seeds come from BLAKE2b).

- `Zipf(n, s, seed)`: exact sampling of ranks 1..n with P(k) = k^-s / H(n, s), by bisection over a
  precomputed cumulative table (`array('d')`, 8 bytes per key, so `MAX_KEYS` = 10^7 keys is 80 MB).
  `top_share(k)` is the probability mass of the k hottest keys: the hit ratio of the optimal
  static top-k cache, the line the benchmarks compare a cache against.
- Size distributions `Fixed(n)` and `Empirical(points)`, and named pools `POOLS` ("etc", "usr",
  "app" after Facebook's memcached study, "bmc" after BMC's evaluation), each a key-size
  distribution, a value-size distribution and a GET/SET/DELETE mix.
- `Workload(keys, skew, pool, seed=...)`: an endless, deterministic stream of `Op`s. A key's name,
  length and value length depend on its rank only (never on the seed or the shard), so every
  client process and the pre-population agree on them; `shard(i, n)` gives client i of n its own
  independent stream over the same key space.
- `open_loop(rate, duration, seed)`: Poisson arrival times (exponential gaps) for an open-loop
  client; the schedule only.

Where the numbers come from: /work/shared/reference/seeds-digest.md §3.1 ("Facebook memcached
facts quoted in the seeds (all citing Atikoglu et al., SIGMETRICS'12)", i.e. "Workload Analysis of
a Large-Scale Key-Value Store") and §3.5 (BMC's Table 3). The reference gives the op mixes exactly
but only a few points of each size distribution (99th percentiles, USR's two key sizes, APP's
270 B cluster); the rest of each `Empirical` below is an approximation, marked as such at the
pool's definition. The paper's own fitted models (its GEV / generalized Pareto fits) are not in
the reference and are not used.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import random
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import NamedTuple

MAX_KEYS = 10_000_000          # Zipf / key-space bound: the CDF table is 8 bytes per key (80 MB)
MAX_KEY_LEN = 250              # memcached's key length limit
MAX_VALUE_LEN = 1_000_000      # memcached's default item limit is 1 MiB including item overhead

GET = "get"
SET = "set"
DELETE = "delete"
KINDS = (GET, SET, DELETE)


def derive_seed(seed: int, *parts: object) -> int:
    """A 64-bit seed derived from `seed` and a label: distinct labels give independent streams."""
    text = repr((int(seed),) + tuple(parts)).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little")


def _unit(*parts: object) -> float:
    """A deterministic number in [0, 1) from the parts (53 bits, like random.random())."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return (int.from_bytes(digest, "little") >> 11) * (1.0 / (1 << 53))


# --- popularity -----------------------------------------------------------------------------


class Zipf:
    """Ranks 1..n with P(k) proportional to 1/k^s (s = 0: uniform); rank 1 is the hottest."""

    def __init__(self, n: int, s: float, seed: int = 0, *, _cdf: array | None = None) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_KEYS:
            raise ValueError(f"Zipf: n must be an integer in 1..{MAX_KEYS}, got {n!r}")
        if isinstance(s, bool) or not isinstance(s, int | float) or not math.isfinite(s) or s < 0:
            raise ValueError(f"Zipf: skew s must be a finite number >= 0, got {s!r}")
        self.n = n
        self.s = float(s)
        self.seed = seed
        self.rng = random.Random(seed)
        if _cdf is None:
            # Unnormalised running sums: cdf[k-1] = sum_{j<=k} j^-s. Summing in rank order adds
            # ever smaller terms to a growing total; for n <= 10^7 the relative error stays ~1e-12.
            _cdf = array("d")
            total = 0.0
            neg = -self.s
            for k in range(1, n + 1):
                total += k**neg
                _cdf.append(total)
        self._cdf = _cdf
        self.total = _cdf[-1]

    def with_seed(self, seed: int) -> Zipf:
        """The same distribution with its own generator; shares the (large) table."""
        return Zipf(self.n, self.s, seed, _cdf=self._cdf)

    def pmf(self, k: int) -> float:
        if not 1 <= k <= self.n:
            raise ValueError(f"Zipf.pmf: rank must be in 1..{self.n}, got {k!r}")
        return k ** -self.s / self.total

    def top_share(self, k: int) -> float:
        """Probability mass of the k hottest ranks (k = 0 gives 0, k >= n gives 1)."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValueError(f"Zipf.top_share: k must be an integer >= 0, got {k!r}")
        if k == 0:
            return 0.0
        if k >= self.n:
            return 1.0
        return self._cdf[k - 1] / self.total

    def sample(self) -> int:
        u = self.rng.random() * self.total
        # First index whose running sum exceeds u; the min() guards the u == total rounding edge.
        return min(bisect.bisect_right(self._cdf, u), self.n - 1) + 1

    def __iter__(self) -> Iterator[int]:
        while True:
            yield self.sample()


# --- sizes ------------------------------------------------------------------------------------


class Fixed:
    """Always `n` bytes."""

    def __init__(self, n: int) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"Fixed: size must be an integer >= 0, got {n!r}")
        self.n = n
        self.min = n
        self.max = n

    def quantile(self, u: float) -> int:
        return self.n

    def cdf(self, size: float) -> float:
        return 1.0 if size >= self.n else 0.0

    def __repr__(self) -> str:
        return f"Fixed({self.n})"


class Empirical:
    """A size distribution given by points of its CDF: `[(size, P(X <= size)), ...]`.

    Sizes strictly increase, probabilities never decrease, the last probability is 1. The first
    point's probability is an atom at that size (0 for none). With `interpolate=True` (default)
    the mass between two points (s0, c0), (s1, c1) is spread evenly over the whole sizes
    s0+1..s1 (a piecewise-linear CDF, exact at the points); with `interpolate=False` only the
    listed sizes occur (a discrete distribution).
    """

    def __init__(self, points: Sequence[tuple[int, float]], *, interpolate: bool = True) -> None:
        pts = [tuple(p) for p in points]
        if not pts:
            raise ValueError("Empirical: needs at least one (size, cumulative probability) point")
        for p in pts:
            if len(p) != 2:
                raise ValueError(f"Empirical: each point must be (size, cumulative p), got {p!r}")
            size, c = p
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise ValueError(f"Empirical: sizes must be integers >= 0, got {size!r}")
            if not isinstance(c, int | float) or not 0.0 <= c <= 1.0:
                raise ValueError(f"Empirical: cumulative probabilities must be in [0, 1], "
                                 f"got {c!r}")
        for (s0, c0), (s1, c1) in zip(pts, pts[1:], strict=False):
            if s1 <= s0:
                raise ValueError(f"Empirical: sizes must strictly increase, got {s0} then {s1}")
            if c1 < c0:
                raise ValueError(f"Empirical: cumulative probabilities must not decrease, "
                                 f"got {c0} then {c1}")
        if pts[-1][1] != 1.0:
            raise ValueError(f"Empirical: the last cumulative probability must be 1, "
                             f"got {pts[-1][1]}")
        self.points = pts
        self.interpolate = interpolate
        self._sizes = [s for s, _ in pts]
        self._cum = [float(c) for _, c in pts]
        if interpolate and pts[0][1] == 0.0:
            self.min = pts[0][0] + 1
        else:
            self.min = next(s for s, c in pts if c > 0)
        self.max = pts[-1][0]

    def quantile(self, u: float) -> int:
        """The size at cumulative probability u in [0, 1)."""
        i = bisect.bisect_right(self._cum, u)
        if i >= len(self._cum):
            return self.max
        if i == 0 or not self.interpolate:
            return self._sizes[i]
        s0, s1 = self._sizes[i - 1], self._sizes[i]
        c0, c1 = self._cum[i - 1], self._cum[i]
        return min(s1, s0 + 1 + int((u - c0) / (c1 - c0) * (s1 - s0)))

    def cdf(self, size: float) -> float:
        """P(X <= size) as specified by the points (exact at the points)."""
        i = bisect.bisect_right(self._sizes, size)
        if i == 0:
            return 0.0
        if i == len(self._sizes) or not self.interpolate or size == self._sizes[i - 1]:
            return self._cum[i - 1]
        s0, s1 = self._sizes[i - 1], self._sizes[i]
        c0, c1 = self._cum[i - 1], self._cum[i]
        return c0 + (c1 - c0) * (math.floor(size) - s0) / (s1 - s0)

    def __repr__(self) -> str:
        return f"Empirical({self.points!r}, interpolate={self.interpolate})"


SizeDist = Fixed | Empirical


@dataclass(frozen=True)
class Mix:
    """Relative weights of GET, SET and DELETE (need not sum to 1)."""

    get: float
    set: float
    delete: float

    def __post_init__(self) -> None:
        for name in KINDS:
            w = getattr(self, name)
            if isinstance(w, bool) or not isinstance(w, int | float) or not math.isfinite(w) \
                    or w < 0:
                raise ValueError(f"Mix: weight {name} must be a finite number >= 0, got {w!r}")
        if self.get + self.set + self.delete <= 0:
            raise ValueError("Mix: at least one of get, set, delete must have a positive weight")

    def fractions(self) -> dict[str, float]:
        total = self.get + self.set + self.delete
        return {k: getattr(self, k) / total for k in KINDS}


@dataclass(frozen=True)
class Pool:
    name: str
    key_sizes: SizeDist
    value_sizes: SizeDist
    mix: Mix
    source: str


_REF = "/work/shared/reference/seeds-digest.md"

POOLS: dict[str, Pool] = {
    # ETC. Mix: seeds-digest.md §3.1, [HIP Table 3]: GET 73.4%, UPDATE 2.3%, DELETE 24.0%
    # (UPDATE = SET, REPLACE and other non-DELETE writes; all generated as SET here).
    # Keys: the reference gives only the 99th percentile, 80 B ([HIP §2.1]). The rest is an
    # approximation: at least 16 B (room for our key names and the switch's 16-byte key width),
    # "typically smaller than 30 B" ([HIP §1.1]) read as 50% <= 30 B, linear between, a 1% tail
    # up to memcached's 250 B limit.
    # Values: 99th percentile 512 B ([HIP §2.1]); "more than half of the value sizes can be
    # smaller than 20 B in some traces" ([HIP §1.1]) read as 50% <= 20 B for ETC (approximation);
    # "a few of around 1 MB" ([HIP §3.2]) as a 0.1% tail from 4 KiB to MAX_VALUE_LEN
    # (approximation; the remaining 0.9% spread 512 B..4 KiB).
    "etc": Pool(
        "etc",
        Empirical([(15, 0.0), (30, 0.50), (80, 0.99), (MAX_KEY_LEN, 1.0)]),
        Empirical([(0, 0.0), (20, 0.50), (512, 0.99), (4096, 0.999), (MAX_VALUE_LEN, 1.0)]),
        Mix(get=0.734, set=0.023, delete=0.240),
        f"{_REF} §3.1 (Atikoglu et al. via [HIP])",
    ),
    # USR. Mix: [HIP Table 3] GET 99.7%, UPDATE 0.2%, DELETE 0.1%. Keys: "only two key sizes
    # (16 B and 21 B)"; their proportions are not in the reference: 50/50 chosen. Values:
    # "virtually only one value size (2 B)" ([HIP §2.1]).
    "usr": Pool(
        "usr",
        Empirical([(16, 0.5), (21, 1.0)], interpolate=False),
        Fixed(2),
        Mix(get=0.997, set=0.002, delete=0.001),
        f"{_REF} §3.1 (Atikoglu et al. via [HIP])",
    ),
    # APP. Mix: [HIP Table 3] GET 83.4%, UPDATE 5.2%, DELETE 11.4% (the §2.1 text says 84% GET;
    # the table's numbers are used). Keys: 99th percentile 45 B ([HIP §2.1]); the rest is an
    # approximation like ETC's (>= 16 B, 50% <= 30 B, 1% tail to 250 B). Values: 99th
    # percentile 450 B ([HIP §2.1]); "in more than 30% of APP's SETs, value sizes are around
    # 270 B" ([HIP §3.2]) as 35% of values in 260..280 B (approximation: the reference speaks
    # of SETs; here one value size per key serves GETs and SETs alike); 30% <= 20 B and the rest
    # linear, a 1% tail up to 1000 B ("about 95% of the observed values were less than 1000
    # bytes", [BMC §4.1]) — all approximations.
    "app": Pool(
        "app",
        Empirical([(15, 0.0), (30, 0.50), (45, 0.99), (MAX_KEY_LEN, 1.0)]),
        Empirical([(0, 0.0), (20, 0.30), (259, 0.55), (280, 0.90), (450, 0.99), (1000, 1.0)]),
        Mix(get=0.834, set=0.052, delete=0.114),
        f"{_REF} §3.1 (Atikoglu et al. via [HIP])",
    ),
    # BMC's evaluation (seeds-digest.md §3.5, [BMC Table 3]): 16-byte keys, 32-byte values,
    # GETs only (memcached is pre-populated with SETs beforehand), Zipf 0.99.
    "bmc": Pool("bmc", Fixed(16), Fixed(32), Mix(get=1, set=0, delete=0), f"{_REF} §3.5"),
}


# --- the stream -------------------------------------------------------------------------------


class Op(NamedTuple):
    kind: str            # GET, SET or DELETE
    key: bytes
    value_len: int       # the key's value length (what a SET writes, what a GET expects); 0 for
    #                      DELETE
    rank: int            # popularity rank of the key, 1 = hottest


KEY_PAD = b"_"


def key_name(rank: int) -> bytes:
    """The unpadded name of rank `rank`: b"k" + decimal rank."""
    return b"k%d" % rank


class Workload:
    """A deterministic stream of operations over `keys` keys with Zipf(`skew`) popularity.

    Sizes and mix come from `pool` (a name in POOLS or a Pool), each overridable by `key_sizes`,
    `value_sizes` and `mix`; without a pool all three must be given. A key's length and value
    length are drawn from the size distributions once per rank, by a hash of the rank (not the
    seed), and its name `k<rank>` is padded with "_" to that length.
    """

    def __init__(
        self,
        keys: int,
        skew: float,
        pool: str | Pool | None = None,
        *,
        key_sizes: SizeDist | None = None,
        value_sizes: SizeDist | None = None,
        mix: Mix | None = None,
        seed: int = 0,
        _zipf: Zipf | None = None,
    ) -> None:
        if isinstance(pool, str):
            if pool not in POOLS:
                raise ValueError(f"Workload: unknown pool {pool!r}; known: {sorted(POOLS)}")
            pool = POOLS[pool]
        if pool is not None and not isinstance(pool, Pool):
            raise ValueError(f"Workload: pool must be a name or a Pool, got {pool!r}")
        key_sizes = key_sizes if key_sizes is not None else pool and pool.key_sizes
        value_sizes = value_sizes if value_sizes is not None else pool and pool.value_sizes
        mix = mix if mix is not None else pool and pool.mix
        missing = [n for n, v in (("key_sizes", key_sizes), ("value_sizes", value_sizes),
                                  ("mix", mix)) if v is None]
        if missing:
            raise ValueError(f"Workload: no pool given, so {', '.join(missing)} must be given")
        for name, dist in (("key_sizes", key_sizes), ("value_sizes", value_sizes)):
            if not isinstance(dist, Fixed | Empirical):
                raise ValueError(f"Workload: {name} must be Fixed or Empirical, got {dist!r}")
        if not isinstance(mix, Mix):
            raise ValueError(f"Workload: mix must be a Mix, got {mix!r}")
        self.zipf = _zipf.with_seed(derive_seed(seed, "zipf")) if _zipf is not None \
            else Zipf(keys, skew, derive_seed(seed, "zipf"))
        longest = len(key_name(keys))
        if key_sizes.min < longest:
            raise ValueError(f"Workload: key sizes go down to {key_sizes.min} B but {keys} keys "
                             f"need names of up to {longest} B")
        if key_sizes.max > MAX_KEY_LEN:
            raise ValueError(f"Workload: key sizes go up to {key_sizes.max} B, above memcached's "
                             f"{MAX_KEY_LEN} B limit")
        self.keys = keys
        self.skew = float(skew)
        self.pool = pool
        self.key_sizes = key_sizes
        self.value_sizes = value_sizes
        self.mix = mix
        self.seed = seed
        self.rng = random.Random(derive_seed(seed, "ops"))
        f = mix.fractions()
        self._get_below = f[GET]
        self._set_below = f[GET] + f[SET]

    def key(self, rank: int) -> bytes:
        """The key of rank `rank`, padded to its drawn length."""
        if not 1 <= rank <= self.keys:
            raise ValueError(f"Workload.key: rank must be in 1..{self.keys}, got {rank!r}")
        length = self.key_sizes.quantile(_unit("key-size", rank))
        return key_name(rank).ljust(length, KEY_PAD)

    def value_len(self, rank: int) -> int:
        """The value length of rank `rank` (the same for every shard and seed)."""
        if not 1 <= rank <= self.keys:
            raise ValueError(f"Workload.value_len: rank must be in 1..{self.keys}, got {rank!r}")
        return self.value_sizes.quantile(_unit("value-size", rank))

    def next(self) -> Op:
        rank = self.zipf.sample()
        u = self.rng.random()
        kind = GET if u < self._get_below else SET if u < self._set_below else DELETE
        return Op(kind, self.key(rank), 0 if kind == DELETE else self.value_len(rank), rank)

    def __iter__(self) -> Iterator[Op]:
        while True:
            yield self.next()

    def take(self, count: int) -> list[Op]:
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"Workload.take: count must be an integer >= 0, got {count!r}")
        return list(islice(self, count))

    def shard(self, i: int, n: int) -> Workload:
        """Client process i of n: the same keys, sizes and mix, its own seed-derived stream."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"Workload.shard: n must be an integer >= 1, got {n!r}")
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n:
            raise ValueError(f"Workload.shard: i must be an integer in 0..{n - 1}, got {i!r}")
        return Workload(self.keys, self.skew, self.pool, key_sizes=self.key_sizes,
                        value_sizes=self.value_sizes, mix=self.mix,
                        seed=derive_seed(self.seed, "shard", i, n), _zipf=self.zipf)


# --- arrivals ---------------------------------------------------------------------------------


def open_loop(rate: float, duration: float, seed: int = 0) -> list[float]:
    """Poisson arrival times in [0, duration) at `rate` per second: exponential gaps of mean
    1/rate, the same list for the same seed. The caller sends at these instants, late or not."""
    for name, v in (("rate", rate), ("duration", duration)):
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise ValueError(f"open_loop: {name} must be a finite number, got {v!r}")
    if rate <= 0:
        raise ValueError(f"open_loop: rate must be > 0 per second, got {rate!r}")
    if duration < 0:
        raise ValueError(f"open_loop: duration must be >= 0 seconds, got {duration!r}")
    rng = random.Random(derive_seed(seed, "open_loop"))
    times: list[float] = []
    t = rng.expovariate(rate)
    while t < duration:
        times.append(t)
        t += rng.expovariate(rate)
    return times
