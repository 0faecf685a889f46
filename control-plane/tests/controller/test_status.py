"""The controller's status server and client, and the merge of several controllers' statuses."""

from __future__ import annotations

from p4cache.controller.status import StatusServer, fetch, merge


def test_a_large_status_arrives_whole_every_time() -> None:
    # The client sends a request line the server need not read; closing with it unread made the
    # kernel send a reset that overtook the end of the body (about half of 200 fetches failed).
    body = {"keys": [{"key": "x" * 100, "slot": i} for i in range(20000)]}
    srv = StatusServer("127.0.0.1:0", lambda: body)
    srv.start()
    try:
        for _ in range(100):
            assert fetch(srv.address)["keys"][-1]["slot"] == 19999
    finally:
        srv.stop()


def test_merge_adds_counters_joins_keys_and_keeps_each_status() -> None:
    a = {"uptime_s": 5.0, "switch": {"connected": True, "grpc": "10.251.1.2:9559"},
         "cache": {"slots": 64, "cached": 2}, "switch_counters": {"hit": 3, "miss": 1},
         "switch_counters_read_s": 4.0, "keys": [{"key": "a"}], "latency": {"p50": 1},
         "hit_ratio": 0.75, "promotions": 2}
    b = {"uptime_s": 3.0, "switch": {"connected": False, "grpc": "10.251.2.2:9559"},
         "cache": {"slots": 64, "cached": 1}, "switch_counters": {"hit": 0, "miss": 4},
         "switch_counters_read_s": None, "keys": [{"key": "b"}], "latency": {"p50": 9},
         "hit_ratio": 0.0, "promotions": 1}
    m = merge({"controller-m1": a, "controller-m2": b})
    assert m["cache"] == {"slots": 128, "cached": 3} and m["promotions"] == 3
    assert m["switch_counters"] == {"hit": 3, "miss": 5} and m["hit_ratio"] == 0.375
    assert m["switch"]["connected"] is False          # all must hold
    assert m["switch"]["grpc"] == "10.251.1.2:9559, 10.251.2.2:9559"
    assert m["uptime_s"] == 3.0 and m["switch_counters_read_s"] is None  # a moment: earliest
    assert [k["key"] for k in m["keys"]] == ["a", "b"]
    assert m["latency"] == {"p50": 1} and m["controllers"]["controller-m2"] is b
    assert merge({"only": a}) is a
