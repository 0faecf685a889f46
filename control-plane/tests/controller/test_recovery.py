"""Restarts: the controller's (state read back from the switch) and the switch's (pipeline
pushed again, cache empty), and flushes."""

from __future__ import annotations

import threading

import pytest

from p4cache import dataplane as dp
from p4cache.controller.promote import SET_SLOT, lookup_match

from .conftest import SERVER_IP, wait_until
from .test_promote import EP, filled, mc_set, slot_state


def promote(ctl, *keys: bytes) -> dict[str, dict]:
    for k in keys:
        ctl.inject_digest(SERVER_IP, k)
    wait_until(lambda: ctl.status()["cache"]["filled"] == len(keys), 10, "promotions")
    return {k["key"]: k for k in ctl.status()["keys"]}


def test_controller_restart_reads_the_cache_back_and_refreshes_it(make_controller, agent
                                                                  ) -> None:
    mc_set(agent, "a", b"1")
    mc_set(agent, "b", b"2", ttl=100)
    ctl1 = make_controller()
    before = promote(ctl1, b"a", b"b")
    ctl1.stop()
    # What the old controller left: entries installed, slots valid.
    mc_set(agent, "a", b"11")   # changed while no controller ran (a gated write would also
    n_before = len(agent.log)   # have invalidated the slot; the refresh reads it again anyway)
    ctl2 = make_controller()
    assert not ctl2.pushed_pipeline
    after = {k: v for k, v in wait_until(
        lambda: (lambda st: st["cache"]["filled"] == 2 and {x["key"]: x for x in st["keys"]})(
            ctl2.status()), 10, "refreshed").items()}
    assert {k: v["slot"] for k, v in after.items()} == {k: v["slot"] for k, v in before.items()}
    for k in ("a", "b"):
        assert after[k]["version"] > before[k]["version"], "versions restored, then newer"
    assert after["b"]["ttl"] > 0 and after["b"]["expires_in_s"] is not None, "TTL relearnt"
    new_ops = agent.log[n_before:]
    assert new_ops[0] == ("sync", ["a", "b"]), "W := the keys found, before any fetch"
    assert sorted(k for op, k in new_ops if op == "fetch") == ["a", "b"]
    st = slot_state(ctl2, after["a"]["slot"])
    assert st.status == dp.STATUS_VALID
    assert st.length == len(dp.render_value_reply(b"a", 0, b"11"))


def test_restart_in_the_middle_of_a_promotion(make_controller, agent) -> None:
    mc_set(agent, "k", b"v")
    ctl1 = make_controller()
    release = threading.Event()
    agent.before_fetch = lambda key: release.wait(10)
    ctl1.inject_digest(SERVER_IP, b"k")
    wait_until(lambda: any(s[0] == "fetch" for s in ctl1.trace), 10, "fetch sent")
    ctl1.stop()            # dies between reserve and fill: entry installed, slot invalid
    agent.before_fetch = None
    release.set()
    ctl2 = make_controller()
    wait_until(filled(ctl2, b"k"), 10, "k filled by the new controller")
    assert ctl2.status()["cache"]["cached"] == 1


def test_entries_the_config_does_not_explain_are_removed(make_controller, agent, softnic,
                                                         pipeline) -> None:
    ctl1 = make_controller()
    ctl1.call(lambda c: c.switch.insert(c.switch.entry(
        dp.TABLE_LOOKUP, lookup_match("10.9.9.9", b"x"), SET_SLOT, {"slot": "1"})))
    ctl1.stop()
    ctl2 = make_controller()
    assert ctl2.call(lambda c: c.switch.read_entries(dp.TABLE_LOOKUP)) == []
    assert ctl2.status()["cache"]["cached"] == 0


def test_switch_restart_reconnects_repushes_and_starts_empty(make_controller, agent, softnic
                                                             ) -> None:
    mc_set(agent, "a", b"1")
    ctl = make_controller()
    promote(ctl, b"a")
    softnic.stop()
    wait_until(lambda: not ctl.status()["switch"]["connected"], 10, "switch seen down")
    st = ctl.status()
    assert st["cache"]["cached"] == 0
    n = len(agent.log)
    softnic.start()
    wait_until(lambda: ctl.status()["switch"]["sessions"] == 2, 20, "reconnected")
    assert ctl.pushed_pipeline
    assert ctl.status()["cache"]["cached"] == 0
    assert ("sync", []) in agent.log[n:], "agents told that nothing is cached"
    # static entries are back, and promotion works again
    assert ctl.call(lambda c: len(c.switch.read_entries(dp.TABLE_AGENTS))) == 1
    promote(ctl, b"a")


@pytest.mark.skipif(not hasattr(dp, "flush_datagram"), reason="OP_FLUSH not in dataplane.py")
def test_a_flush_drops_the_filled_entries(make_controller, agent) -> None:
    mc_set(agent, "a", b"1")
    mc_set(agent, "b", b"2")
    ctl = make_controller()
    keys = promote(ctl, b"a", b"b")
    ack = ctl.updates.request(EP, dp.flush_datagram(77))
    assert (ack.status, ack.version) == (dp.STATUS_APPLIED, 77)
    assert slot_state(ctl, keys["a"]["slot"]).status == dp.STATUS_INVALID
    wait_until(lambda: ctl.status()["evictions_by_reason"].get("flush") == 2, 10, "dropped")
    st = ctl.status()
    assert st["cache"]["cached"] == 0 and st["flushes"] == 1 and st["flushes_seen"] == 1
    assert ctl.call(lambda c: c.switch.read_entries(dp.TABLE_LOOKUP)) == []
    wait_until(lambda: len(agent.ops("unwatch")) == 2, 5, "unwatched")
    promote(ctl, b"a")     # and it comes back from the next digest
