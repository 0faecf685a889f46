"""Promotion, eviction and TTL against a real softnic over P4Runtime, with the agent channel
reading a real memcached. Digests are injected into the worker's queue (a digest needs a
data-plane packet; the end-to-end test in test_e2e.py makes real ones)."""

from __future__ import annotations

import threading
import time

from p4cache import dataplane as dp
from p4cache.controller.cache import Phase
from p4cache.controller.updates import Endpoint

from .agent_stub import memcached_command
from .conftest import SERVER_IP, wait_until

EP = Endpoint(SERVER_IP, "02:00:00:00:00:01")


def mc_set(agent, key: str, value: bytes, flags: int = 0, ttl: int = 0) -> None:
    line = f"set {key} {flags} {ttl} {len(value)}\r\n".encode() + value + b"\r\n"
    assert memcached_command(agent.memcached, line) == b"STORED"


def slot_state(ctl, slot: int) -> dp.Ctrl:
    return ctl.updates.read(EP, slot)


def filled(ctl, key: bytes):
    def check():
        st = ctl.status()
        return next((k for k in st["keys"] if k["key"] == key.decode() and
                     k["phase"] == "filled"), None)
    return check


def test_promotion_reserves_fetches_and_fills_in_order(make_controller, agent) -> None:
    mc_set(agent, "foo", b"bar", flags=7)
    ctl = make_controller()
    seen: dict[str, object] = {}

    def before_fetch(key: str) -> None:
        # At fetch time the entry is installed and its slot is invalid (step 1 done first).
        rows = ctl.switch.read_entries(dp.TABLE_LOOKUP)
        seen["rows"] = rows
        seen["slot"] = slot_state(ctl, rows[0].params["slot"]) if rows else None
    agent.before_fetch = before_fetch
    ctl.inject_digest(SERVER_IP, b"foo")
    k = wait_until(filled(ctl, b"foo"), 10, "foo filled")
    rows = seen["rows"]
    assert len(rows) == 1 and rows[0].match["key"] == int.from_bytes(b"foo", "big")
    assert rows[0].match["key_len"] == 3
    assert seen["slot"].status == dp.STATUS_INVALID
    reply = dp.render_value_reply(b"foo", 7, b"bar")
    st = slot_state(ctl, k["slot"])
    assert (st.status, st.length, st.version) == (dp.STATUS_VALID, len(reply), k["version"])
    steps = [s[0] for s in ctl.trace]
    assert steps == ["invalidate", "insert", "fetch", "fill"]
    assert ctl.trace[3][3] == "applied" and ctl.trace[3][2] == ctl.trace[0][2] + 1
    assert agent.ops("sync")[0] == ("sync", []), "agent synced (empty) before any fetch"
    assert agent.ops()[0][0] == "sync"
    s = ctl.status()
    assert s["promotions"] == 1 and s["latency"]["promotion"]["count"] == 1


def test_written_fill_starts_again_with_a_newer_version(make_controller, agent) -> None:
    mc_set(agent, "foo", b"old")
    ctl = make_controller()
    writes = []

    def write_during_first_fetch(key: str) -> None:
        if writes:
            return
        # A write through the agent's gate while the controller fetches: memcached changes and
        # the agent invalidates the key at the switch (OP_INVALIDATE_KEY from the server).
        mc_set(agent, key, b"new")
        writes.append(ctl.updates.request(EP, dp.invalidate_key_datagram(key.encode())))
    agent.before_fetch = write_during_first_fetch
    ctl.inject_digest(SERVER_IP, b"foo")
    k = wait_until(filled(ctl, b"foo"), 10, "foo filled")
    assert writes[0].status == dp.STATUS_APPLIED
    fills = [s for s in ctl.trace if s[0] == "fill"]
    assert [f[3] for f in fills] == ["written", "applied"]
    invals = [s for s in ctl.trace if s[0] == "invalidate"]
    assert invals[1][2] > fills[0][2], "the second reserve uses a newer version"
    st = slot_state(ctl, k["slot"])
    assert st.length == len(dp.render_value_reply(b"foo", 0, b"new"))
    assert len(agent.ops("fetch")) == 2
    assert ctl.status()["written_retries"] == 1


def test_missing_item_is_given_up_entry_deleted_then_unwatched(make_controller, agent) -> None:
    ctl = make_controller()
    ctl.inject_digest(SERVER_IP, b"nokey")
    wait_until(lambda: ctl.status()["aborted"].get("not-found") == 1, 10, "abort")
    assert ctl.switch.read_entries(dp.TABLE_LOOKUP) == []
    steps = [s[0] for s in ctl.trace]
    assert steps == ["invalidate", "insert", "fetch", "delete", "invalidate", "unwatch"]
    wait_until(lambda: agent.ops("unwatch"), 5, "unwatch")
    assert ctl.call(lambda c: c.policy.slots.free_count) == ctl.cfg.cache.slots


def test_oversized_and_short_ttl_items_are_not_cached(make_controller, agent) -> None:
    mc_set(agent, "big", b"x" * dp.REPLY_MAX)
    mc_set(agent, "brief", b"v", ttl=2)
    ctl = make_controller(ttl_margin_s=2.0)
    ctl.inject_digest(SERVER_IP, b"big")
    ctl.inject_digest(SERVER_IP, b"brief")
    wait_until(lambda: len(ctl.status()["aborted"]) == 2, 10, "both given up")
    assert ctl.status()["aborted"] == {"too-big": 1, "short-ttl": 1}
    assert ctl.switch.read_entries(dp.TABLE_LOOKUP) == []


def test_ttl_entry_leaves_before_the_item_expires(make_controller, agent) -> None:
    mc_set(agent, "ttl", b"v", ttl=4)
    ctl = make_controller(ttl_margin_s=2.5)
    t0 = time.monotonic()
    ctl.inject_digest(SERVER_IP, b"ttl")
    k = wait_until(filled(ctl, b"ttl"), 10, "filled")
    assert k["ttl"] in (3, 4) and k["expires_in_s"] is not None
    wait_until(lambda: ctl.status()["evictions_by_reason"].get("ttl") == 1, 10, "ttl eviction")
    gone = time.monotonic() - t0
    # memcached expires it 4 s (its clock: 3..4 s) after the set; the entry left before.
    assert gone < 4 - 2.5 + 1.0
    assert ctl.switch.read_entries(dp.TABLE_LOOKUP) == []
    assert slot_state(ctl, k["slot"]).status == dp.STATUS_INVALID


def test_eviction_takes_the_coldest_only_for_a_hotter_candidate(make_controller, agent
                                                                ) -> None:
    for k in ("a", "b", "c"):
        mc_set(agent, k, k.encode())
    # A long controller epoch: the rates set below stay as they are (no counter poll decays
    # them). The admission threshold is held at 8; a digest carries the misses counted in the
    # data-plane epoch (1.05 s) when it was sent.
    ctl = make_controller(slots=2, epoch_s=60.0, threshold_min=8, threshold_max=8)
    ctl.inject_digest(SERVER_IP, b"a")
    ctl.inject_digest(SERVER_IP, b"b")
    wait_until(lambda: ctl.status()["cache"]["filled"] == 2, 10, "a and b filled")
    slots = {k["key"]: k["slot"] for k in ctl.status()["keys"]}
    # Hit rates as the counter deltas would give them: b is the colder one.
    # (measured: a whole epoch of 60 s seen; a key not measured yet is never a victim)
    ctl.call(lambda c: (c.policy.frequency.start(slots["a"], 0, 0.0),
                        c.policy.frequency.start(slots["b"], 0, 0.0),
                        c.policy.frequency.observe({slots["a"]: 6000, slots["b"]: 600}, 60.0)))
    ctl.inject_digest(SERVER_IP, b"c", 8)    # 8 misses: 7.6/s, not hotter than b (10/s)
    wait_until(lambda: ctl.status()["rejected"] == 1, 5, "c rejected")
    assert {k["key"] for k in ctl.status()["keys"]} == {"a", "b"}
    ctl.inject_digest(SERVER_IP, b"c", 16)   # its next report, at 16 misses: 15.3/s > 10/s
    wait_until(filled(ctl, b"c"), 10, "c filled")
    st = ctl.status()
    assert {k["key"] for k in st["keys"]} == {"a", "c"}
    assert {k["key"]: k["slot"] for k in st["keys"]}["c"] == slots["b"]
    assert st["evictions_by_reason"] == {"cold": 1}
    i = next(i for i, s in enumerate(ctl.trace) if s[0] == "delete")
    assert ctl.trace[i][2] == b"b"
    # delete the victim's entry, then unwatch it, then c's reserve (which invalidates the
    # slot: the eviction needs no invalidation of its own), then c's entry
    assert [s[0] for s in list(ctl.trace)[i:i + 4]] == ["delete", "unwatch", "invalidate",
                                                        "insert"]


def test_reports_beyond_max_inflight_wait_instead_of_being_dropped(make_controller, agent
                                                                   ) -> None:
    """A burst of hot keys while max_inflight promotions are under way: the reports are kept
    and promoted as places free up, without a second digest (the data plane would send the
    next one only an epoch later)."""
    for k in ("a", "b", "c"):
        mc_set(agent, k, k.encode())
    gate = threading.Event()
    agent.before_fetch = lambda key: gate.wait(10)
    ctl = make_controller(max_inflight=1, epoch_s=60.0)
    for k in (b"a", b"b", b"c"):
        ctl.inject_digest(SERVER_IP, k)
    wait_until(lambda: ctl.status()["deferred"] == 2, 5, "b and c deferred")
    st = ctl.status()
    assert st["pending"] == 2 and st["cache"]["in_progress"] == 1
    gate.set()
    for k in (b"a", b"b", b"c"):
        wait_until(filled(ctl, k), 10, f"{k!r} filled")
    st = ctl.status()
    assert st["digests"] == 3 and st["promotions"] == 3 and st["pending"] == 0


def test_refill_after_a_write_invalidated_a_cached_key(make_controller, agent) -> None:
    mc_set(agent, "foo", b"one")
    ctl = make_controller()
    ctl.inject_digest(SERVER_IP, b"foo")
    k = wait_until(filled(ctl, b"foo"), 10, "filled")
    n = len(ctl.trace)
    ctl.inject_digest(SERVER_IP, b"foo")     # a late report of the misses before the fill:
    ctl.call(lambda c: None)                 # the slot answers, so it is left alone
    assert len(ctl.trace) == n and slot_state(ctl, k["slot"]).status == dp.STATUS_VALID
    mc_set(agent, "foo", b"two")
    ack = ctl.updates.request(EP, dp.invalidate_key_datagram(b"foo"))
    assert ack.status == dp.STATUS_APPLIED
    assert slot_state(ctl, k["slot"]).status == dp.STATUS_INVALID
    ctl.inject_digest(SERVER_IP, b"foo")     # it misses again, so it is reported again
    wait_until(lambda: ctl.status()["refills"] == 1, 10, "refill")
    st = slot_state(ctl, k["slot"])
    assert st.status == dp.STATUS_VALID
    assert st.length == len(dp.render_value_reply(b"foo", 0, b"two"))


def test_busy_agent_aborts_the_promotion(make_controller, agent) -> None:
    mc_set(agent, "hot", b"v")
    agent.busy_keys.add("hot")
    ctl = make_controller()
    ctl.inject_digest(SERVER_IP, b"hot")
    wait_until(lambda: ctl.status()["aborted"].get("busy") == 1, 10, "busy abort")
    assert ctl.switch.read_entries(dp.TABLE_LOOKUP) == []
    assert ctl.status()["cache"]["cached"] == 0
    assert Phase.FILLED  # noqa: B018 (import used)


def test_fills_refused_every_time_give_up_after_the_bound(make_controller, agent) -> None:
    mc_set(agent, "churn", b"v")
    ctl = make_controller(fill_attempts=3)
    agent.before_fetch = lambda key: ctl.updates.request(
        EP, dp.invalidate_key_datagram(key.encode()))   # a write during every fetch
    ctl.inject_digest(SERVER_IP, b"churn")
    wait_until(lambda: ctl.status()["aborted"].get("written") == 1, 10, "given up")
    assert [s[3] for s in ctl.trace if s[0] == "fill"] == ["written"] * 3
    assert ctl.switch.read_entries(dp.TABLE_LOOKUP) == []


def test_a_version_behind_the_slot_is_resynced_by_op_read(make_controller, agent) -> None:
    mc_set(agent, "k", b"v")
    ctl = make_controller()
    assert ctl.updates.update(EP, 0, 100, b"").status == dp.STATUS_APPLIED
    ctl.call(lambda c: c.cache.versions.__setitem__(0, 5))   # the controller's idea: 5
    ctl.inject_digest(SERVER_IP, b"k")
    k = wait_until(filled(ctl, b"k"), 10, "filled")
    assert k["slot"] == 0 and k["version"] == 102
    assert ctl.status()["stale_resyncs"] == 1


def test_a_restarted_agent_is_synced_before_anything_else(make_controller, agent) -> None:
    mc_set(agent, "a", b"1")
    ctl = make_controller()
    ctl.inject_digest(SERVER_IP, b"a")
    wait_until(filled(ctl, b"a"), 10, "filled")
    agent.restart()
    wait_until(lambda: agent.log[-1] == ("sync", ["a"]), 10, "resync after the restart")
    assert agent.watched == {"a"}
    assert ctl.status()["agents"][0]["sessions"] == 2


def test_an_absent_key_written_back_is_cached_after_one_epoch(make_controller, agent) -> None:
    """Cache-aside: a key found deleted is usually written back at once. It waits one epoch,
    not the five of keys that cannot be cached at all."""
    ctl = make_controller(epoch_s=1.5)
    ctl.inject_digest(SERVER_IP, b"later")
    wait_until(lambda: ctl.status()["aborted"].get("not-found") == 1, 10, "abort")
    given_up = time.monotonic()
    mc_set(agent, "later", b"back")
    ctl.inject_digest(SERVER_IP, b"later")      # within the epoch: still cooling down
    time.sleep(0.3)
    assert len(agent.ops("fetch")) == 1
    time.sleep(max(0.0, given_up + 1.6 - time.monotonic()))
    ctl.inject_digest(SERVER_IP, b"later")
    wait_until(filled(ctl, b"later"), 4, "later filled one epoch after it was given up")
    assert len(agent.ops("fetch")) == 2
