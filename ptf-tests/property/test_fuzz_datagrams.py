"""Fuzz run: random and mutated memcached / control datagrams against the reference model.

The same run goes through the xdp engine (the program compiled to XDP, in the kernel) with
softnic's Python engine beside it as a twin: both must agree with the model, and with each other on
every frame (outputs, packet-ins, digests) and on the whole register and counter state
(``cache_rig``, ``twin=True``): the differential test of the two engines.

Size and seed: ``--fuzz-n`` / ``P4CACHE_FUZZ_N`` (default 5000 for ``make test``),
``--fuzz-seed`` / ``P4CACHE_FUZZ_SEED`` (default 1123); ``make fuzz N=100000 [SEED=s]`` runs the
big one. Every datagram is checked for the three invariants (cache_rig): no engine error, exactly
the model's output frames (nothing malformed answered, forwarded frames unchanged), slot
registers exactly the model's. A failure names the seed and the datagram's number; rerunning with
that seed and ``N`` = number + 1 ends on it.
"""

from __future__ import annotations

import random
import time

import cache_oracle as co
import pytest
from cache_rig import LOOKUP, Mismatch, Rig, engine_errors
from fuzz_corpus import Corpus

REFILL_EVERY = 20  # datagrams between two refills of an invalid cached slot (keeps hits coming)
# A flush stops every slot, and a good part of the datagrams flush: a get seed's slot that does
# not answer is refilled first this often, so hits keep coming.
REFILL_BEFORE_GET = 0.6


def refill(rig: Rig, rng: random.Random, slot: int) -> None:
    key = next(k for (_, k), s in LOOKUP.items() if s == slot)
    rig.fill(slot, rng.choice((b"VALUE ", b"")) + key + rng.randbytes(rng.randrange(0, 400)))


def run_fuzz(rig: Rig, n: int, seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    corpus = Corpus(rng, rig.model)
    origins: dict[str, int] = {}
    slots = sorted(LOOKUP.values())
    for i in range(n):
        origin = "a refill"
        try:
            if i % REFILL_EVERY == 0:
                invalid = [s for s in slots if not rig.model.answers(s)]
                if invalid:
                    refill(rig, rng, rng.choice(invalid))
            d = corpus.next()
            if (d.slot is not None and not rig.model.answers(d.slot)
                    and rng.random() < REFILL_BEFORE_GET):
                refill(rig, rng, d.slot)
            origin = d.origin
            origins[origin] = origins.get(origin, 0) + 1
            if d.port is None:
                rig.send_out(d.frame, d.egress)
            else:
                rig.send(d.port, d.frame)
        except Mismatch as e:
            raise Mismatch(f"fuzz seed {seed}, datagram #{i} of {n} ({origin}); rerun: "
                           f"P4CACHE_FUZZ_SEED={seed} P4CACHE_FUZZ_N={i + 1}\n{e}") from None
    return origins


def test_fuzz_random_and_mutated_datagrams(rig: Rig, fuzz_n: int, fuzz_seed: int) -> None:
    check_fuzz(rig, fuzz_n, fuzz_seed)


def test_fuzz_xdp_engine_with_python_twin(fuzz_n: int, fuzz_seed: int) -> None:
    from softnic.runtime.xdp.libbpf import missing_requirements
    missing = missing_requirements()
    if missing:
        pytest.skip("the xdp engine cannot run here: " + "; ".join(missing))
    rig = Rig(engine="xdp", twin=True)
    try:
        check_fuzz(rig, fuzz_n, fuzz_seed)
        state = rig.twin_state_problem()
        assert state is None, state
        print(f"  differential: {rig.sent} frames through the xdp and the Python engine, "
              f"{rig.differences} differences")
        assert rig.differences == 0
    finally:
        rig.sw.close()


def check_fuzz(rig: Rig, fuzz_n: int, fuzz_seed: int) -> None:
    sent_before = rig.sent
    t0 = time.perf_counter()
    origins = run_fuzz(rig, fuzz_n, fuzz_seed)
    dt = time.perf_counter() - t0
    total = rig.sent - sent_before
    kinds = rig.tally.kinds
    errors, asserts = engine_errors(rig.sw)
    print(f"\nfuzz ({rig.engine}): seed {fuzz_seed}, {fuzz_n} datagrams (+{total - fuzz_n} "
          f"refills) in {dt:.1f} s, {total / dt:.0f} datagrams/s, engine errors {errors}, "
          f"assert failures {asserts}")
    print("  verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    top = sorted(rig.tally.reasons.items(), key=lambda kv: -kv[1])
    print("  reasons: " + "; ".join(f"{k}: {v}" for k, v in top))
    flushes = sorted(rig.tally.flushes.items(), key=lambda kv: -kv[1])
    print(f"  flushes {sum(rig.tally.flushes.values())}: "
          + "; ".join(f"{k}: {v}" for k, v in flushes))
    print(f"  frames on which a known deviation changes the verdict: {rig.tally.deviated}")
    print("  origins: " + "; ".join(f"{k}: {v}" for k, v in sorted(origins.items())))
    assert engine_errors(rig.sw) == (0, 0)
    # The run must reach every part of the cache, or it proves little.
    if fuzz_n >= 2000:
        for kind in ("answered", "forwarded", "dropped", "acked", "sent"):
            assert kinds.get(kind, 0) > 0, f"no datagram was {kind}: {kinds}"
        reasons = rig.tally.reasons
        assert any("slot invalidated" in r for r in reasons), reasons
        assert reasons.get("update applied", 0) > 0, reasons
        assert reasons.get("refill across a flush refused", 0) > 0, reasons
        assert reasons.get("flush requested", 0) > 0, reasons  # OP_FLUSH
        assert reasons.get("flush request with a body (UDP length not 18)", 0) > 0, reasons
        for why in (co.FIRST_FRAGMENT, co.LATER_FRAGMENT):  # fragments reached
            assert rig.tally.flushes.get(why, 0) > 0, rig.tally.flushes
        if rig.strict is not None:  # the open deviations are reached (fixed or not)
            assert rig.tally.deviated > 0
        assert kinds["answered"] >= fuzz_n // 200, kinds  # flushes must leave room for hits
