"""The workload generator: Zipf sampling against the formula, pool numbers against the reference
(/work/shared/reference/seeds-digest.md §3.1, §3.5), determinism, shards, Poisson arrivals, and
the errors for bad parameters. Expected values are computed here from the formulas, not read back
from the generator."""

from __future__ import annotations

import functools
import math
import statistics
from collections import Counter

import pytest

from p4cache.workload.generator import (
    DELETE,
    GET,
    MAX_KEYS,
    POOLS,
    SET,
    Empirical,
    Fixed,
    Mix,
    Workload,
    Zipf,
    open_loop,
)


@functools.cache
def zipf_pmf(n: int, s: float) -> list[float]:
    weights = [k ** -s for k in range(1, n + 1)]
    total = math.fsum(weights)
    return [w / total for w in weights]


def within_sigmas(count: int, trials: int, p: float, sigmas: float = 5.0) -> bool:
    sd = math.sqrt(trials * p * (1 - p))
    return abs(count - trials * p) <= sigmas * max(sd, 1.0)


# --- Zipf ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2])
def test_zipf_frequencies_match_formula(seed: int) -> None:
    n, s, trials = 30, 0.99, 150_000
    z = Zipf(n, s, seed)
    counts = Counter(z.sample() for _ in range(trials))
    pmf = zipf_pmf(n, s)
    for k in range(1, n + 1):
        assert within_sigmas(counts[k], trials, pmf[k - 1]), (k, counts[k], trials * pmf[k - 1])
    # Also the shape: rank 1 is about 2^0.99 times as frequent as rank 2.
    assert counts[1] / counts[2] == pytest.approx(2 ** 0.99, rel=0.05)


def test_zipf_uniform_when_skew_zero() -> None:
    n, trials = 10, 100_000
    z = Zipf(n, 0, seed=7)
    counts = Counter(z.sample() for _ in range(trials))
    assert set(counts) == set(range(1, n + 1))
    for k in range(1, n + 1):
        assert within_sigmas(counts[k], trials, 1 / n)
    assert z.pmf(1) == pytest.approx(0.1) and z.pmf(10) == pytest.approx(0.1)
    assert z.top_share(3) == pytest.approx(0.3)


def test_zipf_top1_share_at_099() -> None:
    n, trials = 10_000, 100_000
    harmonic = math.fsum(k ** -0.99 for k in range(1, n + 1))
    z = Zipf(n, 0.99, seed=3)
    assert z.top_share(1) == pytest.approx(1 / harmonic, rel=1e-9)
    assert 0.09 < z.top_share(1) < 0.11   # ~1/H(10^4, 0.99) = 0.1017
    hits = sum(1 for _ in range(trials) if z.sample() == 1)
    assert within_sigmas(hits, trials, 1 / harmonic)


def test_zipf_ranks_in_range() -> None:
    z = Zipf(3, 0.5, seed=11)
    seen = Counter(z.sample() for _ in range(20_000))
    assert set(seen) == {1, 2, 3}
    one = Zipf(1, 2.0, seed=1)
    assert {one.sample() for _ in range(100)} == {1}
    big = Zipf(100_000, 1.2, seed=5)
    assert all(1 <= big.sample() <= 100_000 for _ in range(20_000))


def test_top_share_is_the_sum_of_the_hottest() -> None:
    n, s = 5_000, 0.9
    z = Zipf(n, s)
    pmf = zipf_pmf(n, s)
    for k in (1, 2, 10, 100, 1_234, 4_999):
        assert z.top_share(k) == pytest.approx(math.fsum(pmf[:k]), rel=1e-9), k
    assert z.top_share(0) == 0.0
    assert z.top_share(n) == 1.0 and z.top_share(n + 10) == 1.0
    assert z.pmf(7) == pytest.approx(pmf[6], rel=1e-9)


def test_zipf_deterministic_per_seed() -> None:
    z1, z2, z3 = Zipf(1000, 0.99, 42), Zipf(1000, 0.99, 42), Zipf(1000, 0.99, 43)
    s1 = [z1.sample() for _ in range(500)]
    assert s1 == [z2.sample() for _ in range(500)]
    assert s1 != [z3.sample() for _ in range(500)]
    shared = z1.with_seed(42)
    assert [shared.sample() for _ in range(500)] == s1


# --- sizes --------------------------------------------------------------------------------------


def test_empirical_interpolated_matches_its_points() -> None:
    d = Empirical([(9, 0.0), (10, 0.2), (20, 0.7), (30, 1.0)])
    assert d.min == 10 and d.max == 30
    sizes = [d.quantile(i / 10_000) for i in range(10_000)]
    assert min(sizes) == 10 and max(sizes) == 30
    n = len(sizes)
    assert sum(1 for x in sizes if x <= 10) / n == pytest.approx(0.2, abs=1e-3)
    assert sum(1 for x in sizes if x <= 20) / n == pytest.approx(0.7, abs=1e-3)
    assert sum(1 for x in sizes if x <= 15) / n == pytest.approx(0.45, abs=1e-3)
    assert d.cdf(20) == 0.7 and d.cdf(15) == pytest.approx(0.45) and d.cdf(5) == 0.0


def test_empirical_discrete_only_listed_sizes() -> None:
    d = Empirical([(4, 0.25), (8, 0.25), (16, 1.0)], interpolate=False)
    sizes = Counter(d.quantile(i / 1000) for i in range(1000))
    assert sizes == {4: 250, 16: 750}
    assert d.min == 4 and d.max == 16
    assert Fixed(7).quantile(0.9) == 7 and Fixed(7).min == Fixed(7).max == 7


# --- pools against the reference (seeds-digest.md §3.1 [HIP Table 3], §3.5 [BMC Table 3]) ------


REFERENCE_MIX = {
    "usr": (0.997, 0.002, 0.001),
    "etc": (0.734, 0.023, 0.240),
    "app": (0.834, 0.052, 0.114),
    "bmc": (1.0, 0.0, 0.0),
}


@pytest.mark.parametrize("name", sorted(REFERENCE_MIX))
def test_pool_mix_matches_reference(name: str) -> None:
    get, set_, delete = REFERENCE_MIX[name]
    f = POOLS[name].mix.fractions()
    total = get + set_ + delete   # the reference rows sum to 99.7..100.1%
    assert f[GET] == pytest.approx(get / total, abs=1e-9)
    assert f[SET] == pytest.approx(set_ / total, abs=1e-9)
    assert f[DELETE] == pytest.approx(delete / total, abs=1e-9)
    trials = 40_000
    kinds = Counter(op.kind for op in Workload(1000, 0.99, name, seed=9).take(trials))
    for kind, p in ((GET, get / total), (SET, set_ / total), (DELETE, delete / total)):
        assert within_sigmas(kinds[kind], trials, p), (kind, kinds[kind], p)


def _per_key(name: str, keys: int = 20_000) -> tuple[list[int], list[int]]:
    w = Workload(keys, 0.99, name)
    return ([len(w.key(r)) for r in range(1, keys + 1)],
            [w.value_len(r) for r in range(1, keys + 1)])


def _frac_at_most(xs: list[int], bound: int) -> float:
    return sum(1 for x in xs if x <= bound) / len(xs)


def test_usr_sizes() -> None:
    ks, vs = _per_key("usr")
    assert set(ks) == {16, 21}                       # "only two key sizes (16 B and 21 B)"
    assert 0.45 < ks.count(16) / len(ks) < 0.55      # proportion not in the reference: 50/50
    assert set(vs) == {2}                            # "virtually only one value size (2 B)"


@pytest.mark.parametrize(("name", "key_p99", "value_p99"), [("etc", 80, 512), ("app", 45, 450)])
def test_pool_99th_percentiles(name: str, key_p99: int, value_p99: int) -> None:
    ks, vs = _per_key(name)
    assert _frac_at_most(ks, key_p99) == pytest.approx(0.99, abs=0.004)
    assert _frac_at_most(ks, key_p99 - 5) < 0.985
    assert _frac_at_most(vs, value_p99) == pytest.approx(0.99, abs=0.004)
    assert _frac_at_most(vs, value_p99 - 50) < 0.985
    assert min(ks) >= 16 and max(ks) <= 250
    assert min(vs) >= 1
    assert _frac_at_most(vs, 999) >= 0.95            # "about 95% ... less than 1000 bytes"


def test_app_270_byte_cluster() -> None:
    _, vs = _per_key("app")
    near = sum(1 for v in vs if 260 <= v <= 280) / len(vs)
    assert near > 0.30                               # "more than 30% ... around 270 B"


def test_bmc_pool() -> None:
    ops = Workload(100_000, 0.99, "bmc", seed=1).take(5_000)
    assert {op.kind for op in ops} == {GET}
    assert {len(op.key) for op in ops} == {16}
    assert {op.value_len for op in ops} == {32}


# --- the stream ---------------------------------------------------------------------------------


def test_keys_stable_unique_and_padded() -> None:
    a = Workload(50_000, 0.99, "etc", seed=1)
    b = Workload(50_000, 0.5, "etc", seed=2)
    keys = [a.key(r) for r in range(1, 50_001)]
    assert len(set(keys)) == len(keys)
    assert keys == [b.key(r) for r in range(1, 50_001)]           # per rank, not per seed
    assert all(k.startswith(b"k%d" % r) for r, k in enumerate(keys, 1))
    assert keys[41].rstrip(b"_") == b"k42"
    assert len({len(k) for k in keys}) > 20                         # sizes drawn per key
    for op in a.take(2_000):
        assert op.key == a.key(op.rank)
        assert op.value_len == (0 if op.kind == DELETE else a.value_len(op.rank))


def test_workload_deterministic_per_seed() -> None:
    def run(seed: int) -> list:
        return Workload(10_000, 0.99, "app", seed=seed).take(2_000)

    assert run(5) == run(5)
    assert run(5) != run(6)
    assert [op.kind for op in run(5)] != [op.kind for op in run(6)]


def test_shards_are_reproducible_and_independent() -> None:
    n, s = 1_000, 0.99
    base = Workload(n, s, "etc", seed=77)
    shards = [base.shard(i, 4) for i in range(4)]
    streams = [[op.rank for op in sh.take(20_000)] for sh in shards]
    assert streams[2] == [op.rank for op in base.shard(2, 4).take(20_000)]
    assert [op.rank for op in Workload(n, s, "etc", seed=77).shard(2, 4).take(50)] \
        == streams[2][:50]
    # Independent: two shards agree at a position only as often as two independent Zipf draws
    # do (the collision probability sum p_k^2); identical or shifted copies would not.
    collide = math.fsum(p * p for p in zipf_pmf(n, s))
    for a in range(4):
        for b in range(a + 1, 4):
            assert streams[a] != streams[b]
            same = sum(1 for x, y in zip(streams[a], streams[b], strict=True) if x == y)
            assert within_sigmas(same, 20_000, collide), (a, b, same, collide * 20_000)
            assert streams[a][1:101] != streams[b][:100]
    # Each shard is still the same Zipf.
    top1 = zipf_pmf(n, s)[0]
    for st in streams:
        assert within_sigmas(st.count(1), 20_000, top1)
    assert base.shard(0, 1).take(100) != base.take(100)
    # The op kinds too are drawn independently per shard.
    f = base.mix.fractions()
    same_kind = math.fsum(p * p for p in f.values())
    k0 = [op.kind for op in shards[0].take(20_000)]
    k1 = [op.kind for op in shards[1].take(20_000)]
    agree = sum(1 for x, y in zip(k0, k1, strict=True) if x == y)
    assert within_sigmas(agree, 20_000, same_kind), (agree, same_kind * 20_000)


# --- arrivals -----------------------------------------------------------------------------------


def test_open_loop_poisson() -> None:
    rate, duration = 5_000.0, 10.0
    times = open_loop(rate, duration, seed=1)
    expected = rate * duration
    assert abs(len(times) - expected) <= 5 * math.sqrt(expected)
    assert all(0 <= t < duration for t in times)
    assert times == sorted(times)
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    mean = statistics.fmean(gaps)
    assert mean == pytest.approx(1 / rate, rel=0.03)
    assert statistics.pstdev(gaps) / mean == pytest.approx(1.0, abs=0.05)  # exponential: CV 1
    # Counts per 10 ms window are Poisson(50): variance about equal to the mean.
    windows = Counter(int(t / 0.01) for t in times)
    counts = [windows.get(i, 0) for i in range(int(duration / 0.01))]
    assert statistics.pvariance(counts) == pytest.approx(statistics.fmean(counts), rel=0.15)


def test_open_loop_deterministic() -> None:
    assert open_loop(1000, 1.0, seed=3) == open_loop(1000, 1.0, seed=3)
    assert open_loop(1000, 1.0, seed=3) != open_loop(1000, 1.0, seed=4)
    assert open_loop(1000, 0, seed=3) == []


# --- bad parameters -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: Zipf(0, 1.0), r"n must be an integer in 1\.\."),
        (lambda: Zipf(MAX_KEYS + 1, 1.0), r"n must be an integer in 1\.\.10000000"),
        (lambda: Zipf(10, -0.5), r"skew s must be a finite number >= 0"),
        (lambda: Zipf(10, float("nan")), r"skew s must be a finite number >= 0"),
        (lambda: Zipf(10, 1.0).top_share(-1), r"k must be an integer >= 0"),
        (lambda: Fixed(-1), r"size must be an integer >= 0"),
        (lambda: Empirical([]), r"at least one"),
        (lambda: Empirical([(10, 0.5), (5, 1.0)]), r"sizes must strictly increase"),
        (lambda: Empirical([(1, 0.6), (5, 0.5), (6, 1.0)]), r"must not decrease"),
        (lambda: Empirical([(1, 0.5), (5, 0.9)]), r"last cumulative probability must be 1"),
        (lambda: Empirical([(1, 1.5)]), r"must be in \[0, 1\]"),
        (lambda: Mix(1, -1, 0), r"weight set must be a finite number >= 0"),
        (lambda: Mix(0, 0, 0), r"at least one of get, set, delete"),
        (lambda: Workload(10, 0.99, "nope"), r"unknown pool 'nope'"),
        (lambda: Workload(10, 0.99), r"key_sizes, value_sizes, mix must be given"),
        (lambda: Workload(10, 0.99, key_sizes=Fixed(16), value_sizes=Fixed(2)),
         r"mix must be given"),
        (lambda: Workload(10**6, 0.99, key_sizes=Fixed(4), value_sizes=Fixed(2), mix=Mix(1, 0, 0)),
         r"key sizes go down to 4 B but 1000000 keys need names of up to 8 B"),
        (lambda: Workload(10, 0.99, "bmc", key_sizes=Fixed(300)), r"above memcached's 250 B"),
        (lambda: Workload(10, 0.99, "bmc").shard(4, 4), r"i must be an integer in 0\.\.3"),
        (lambda: Workload(10, 0.99, "bmc").shard(0, 0), r"n must be an integer >= 1"),
        (lambda: Workload(10, 0.99, "bmc").key(11), r"rank must be in 1\.\.10"),
        (lambda: open_loop(0, 1.0), r"rate must be > 0"),
        (lambda: open_loop(10, -1.0), r"duration must be >= 0"),
        (lambda: open_loop(float("inf"), 1.0), r"rate must be a finite number"),
    ],
)
def test_bad_parameters(make, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make()


def test_explicit_sizes_override_pool() -> None:
    w = Workload(100, 0.0, "etc", key_sizes=Fixed(16), value_sizes=Fixed(100),
                 mix=Mix(get=0, set=1, delete=0), seed=1)
    ops = w.take(200)
    assert {(op.kind, len(op.key), op.value_len) for op in ops} == {(SET, 16, 100)}
