"""p4cache-lincheck (porcupine, tools/lincheck) through p4cache.lincheck, on hand-made histories
whose verdict is known, and on a large history from a sequential simulation. The real binary."""

from __future__ import annotations

import os
import random
import subprocess
import threading
import time
from pathlib import Path

import pytest

from p4cache.lincheck import (
    HistoryRecorder,
    LincheckError,
    Op,
    Verdict,
    check_history,
    check_ops,
    find_binary,
    read_history,
)
from p4cache.paths import checkout

REPO = checkout()

MS = 1_000_000
S = 1_000_000_000


@pytest.fixture(scope="session", autouse=True)
def lincheck_binary() -> Path:
    """Build (or bring up to date) build/bin/p4cache-lincheck, unless $P4CACHE_LINCHECK is set."""
    if not os.environ.get("P4CACHE_LINCHECK"):
        proc = subprocess.run(
            ["make", "-s", "lincheck"], cwd=REPO, capture_output=True, text=True, check=False
        )
        assert proc.returncode == 0, f"make lincheck failed:\n{proc.stdout}\n{proc.stderr}"
    return find_binary()


def op(
    key: str,
    name: str,
    call_ms: float,
    ret_ms: float | None,
    result: str | None,
    value: str | None = None,
    ttl: int = 0,
    client: int = 0,
) -> Op:
    ret = None if ret_ms is None else int(ret_ms * MS)
    return Op(client, key, name, int(call_ms * MS), ret, result, value, ttl)  # type: ignore[arg-type]


def set_(key: str, call: float, ret: float | None, value: str, result: str = "ok", ttl: int = 0,
         client: int = 0) -> Op:
    return op(key, "set", call, ret, result, value, ttl, client)


def get(key: str, call: float, ret: float | None, result: str | None, client: int = 1) -> Op:
    return op(key, "get", call, ret, result, client=client)


def delete(key: str, call: float, ret: float | None, result: str, client: int = 2) -> Op:
    return op(key, "delete", call, ret, result, client=client)


def assert_ok(v: Verdict) -> None:
    assert v.ok and v.exit_code == 0, v.violations
    assert all(r.result == "ok" for r in v.per_key.values())


def assert_violation(v: Verdict, key: str) -> dict:
    assert not v.ok and v.exit_code == 1, v
    assert v.failing_keys == [key], v.violations
    assert v.per_key[key].result == "illegal"
    return v.violations[0]


# --- linearizable --------------------------------------------------------------------------------

def test_concurrent_sets_and_gets_with_overlapping_intervals() -> None:
    ops = [
        set_("k", 0, 10, "a", client=0),
        set_("k", 5, 15, "b", client=1),
        get("k", 1, 3, None, client=2),  # before either set took effect
        get("k", 6, 12, "b", client=2),  # b first ...
        get("k", 12, 20, "a", client=3),  # ... then a (a's set overlaps b's)
        get("k", 21, 30, "a", client=2),
        get("other", 0, 1, None),
    ]
    v = check_ops(ops)
    assert_ok(v)
    assert v.keys == 2 and v.operations == 7
    assert v.per_key["k"].operations == 6


def test_deletes() -> None:
    ops = [
        delete("k", 0, 1, "not_found"),
        set_("k", 2, 3, "v"),
        get("k", 4, 5, "v"),
        delete("k", 6, 8, "ok"),
        get("k", 7, 9, "v"),  # concurrent with the delete: before it
        get("k", 10, 11, None),
        delete("k", 12, 13, "not_found"),
    ]
    assert_ok(check_ops(ops))


def test_unknown_outcome_writes_that_did_and_did_not_happen() -> None:
    ops = [
        set_("done", 0, 1, "v1"),
        set_("done", 2, None, "v2", result="unknown"),  # never answered, took effect
        get("done", 50, 51, "v1"),
        get("done", 60, 61, "v2"),
        get("done", 70, 71, "v2"),
        set_("lost", 0, 1, "v1"),
        set_("lost", 2, 5, "v2", result="error"),  # an error reply: maybe not done
        get("lost", 10, 11, "v1"),
        delete("lost", 12, None, "unknown"),
        get("lost", 20, 21, "v1"),
        get("lost", 30, None, None),  # a get without reply is dropped
    ]
    v = check_ops(ops)
    assert_ok(v)
    assert v.dropped == 1


def test_ttl_expiry_inside_the_window() -> None:
    # set at [0, 1 ms] with ttl 2: expires in [0+2-1-0.5, 0.001+2+1+0.5] s = [0.5 s, 3.501 s]
    ops = [
        set_("early", 0, 1, "v", ttl=2),
        get("early", 550, 560, None),  # memcached may already have dropped it
        get("early", 3000, 3001, None),
        set_("late", 0, 1, "v", ttl=2),
        get("late", 3400, 3410, "v"),  # ... or still serve it
        get("late", 3600, 3610, None),
        set_("both", 0, 1, "v", ttl=2),
        get("both", 1000, 1001, "v"),
        get("both", 1500, 1501, None),
        set_("forever", 0, 1, "v", ttl=0),
        get("forever", 1_000_000, 1_000_001, "v"),
    ]
    assert_ok(check_ops(ops))


# --- not linearizable ----------------------------------------------------------------------------

def test_stale_read_after_acknowledged_write() -> None:
    ops = [set_("k", 0, 1, "v1"), set_("k", 2, 3, "v2"), get("k", 4, 5, "v1")]
    vio = assert_violation(check_ops(ops), "k")
    assert [o["line"] for o in vio["ops"]] == [3]
    assert vio["ops"][0]["result"] == "v1"
    assert '"v2"' in vio["state"]


def test_read_of_a_value_never_written() -> None:
    ops = [set_("k", 0, 1, "v1"), get("k", 2, 3, "ghost"), get("good", 0, 1, None)]
    v = check_ops(ops)
    assert_violation(v, "k")
    assert v.per_key["good"].result == "ok"


def test_miss_after_set_without_delete_or_expiry() -> None:
    ops = [set_("k", 0, 1, "v"), get("k", 5, 6, None)]
    assert_violation(check_ops(ops), "k")
    # with a TTL, a miss before the earliest possible expiry (10 - 1 - 0.5 s) is one too
    ops = [set_("t", 0, 1, "v", ttl=10), get("t", 8000, 8400, None)]
    assert_violation(check_ops(ops), "t")


def test_value_served_long_after_its_ttl_window() -> None:
    ops = [set_("k", 0, 1, "v", ttl=2), get("k", 4000, 4001, "v")]
    assert_violation(check_ops(ops), "k")  # latest expiry 3.501 s
    assert_ok(check_ops(ops, slack_s=1.0))  # the slack is the knob: now 4.001 s


def test_sequential_gets_see_writes_in_the_opposite_order_of_real_time() -> None:
    ops = [
        set_("k", 0, 100, "a", client=0),
        set_("k", 0, 100, "b", client=1),
        get("k", 10, 20, "b", client=2),
        get("k", 30, 40, "a", client=2),
        get("k", 50, 60, "b", client=3),  # b, a, b: no order of two sets explains it
    ]
    assert_violation(check_ops(ops), "k")
    assert_ok(check_ops(ops[:4]))  # b then a alone is fine: b took effect first


def test_value_of_an_unknown_write_seen_then_the_older_one() -> None:
    ops = [
        set_("k", 0, 1, "v1"),
        set_("k", 2, None, "v2", result="unknown"),
        get("k", 3, 4, "v2"),
        get("k", 5, 6, "v1"),
    ]
    assert_violation(check_ops(ops), "k")


def test_delete_reported_ok_for_a_key_never_set_and_read_after_delete() -> None:
    assert_violation(check_ops([delete("k", 0, 1, "ok")]), "k")
    ops = [set_("k", 0, 1, "v"), delete("k", 2, 3, "ok"), get("k", 4, 5, "v")]
    assert_violation(check_ops(ops), "k")


def test_viz_writes_html_for_the_failing_key(tmp_path: Path) -> None:
    ops = [set_("bad key/1", 0, 1, "v1"), get("bad key/1", 2, 3, "ghost"), get("ok", 0, 1, None)]
    v = check_ops(ops, viz_dir=tmp_path)
    vio = assert_violation(v, "bad key/1")
    files = list(tmp_path.iterdir())
    assert [Path(vio["viz"])] == files
    html = files[0].read_text()
    assert "ghost" in html and "<html" in html.lower()


# --- errors --------------------------------------------------------------------------------------

def test_bad_input_is_an_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text('{"key":"k","op":"get","call":1,"return":2,"result":null}\n{"key":"k"}\n')
    with pytest.raises(LincheckError, match="bad_input: line 2"):
        check_history(path)
    path.write_text('{"key":"k","op":"set","value":"v","call":5,"return":2,"result":"ok"}\n')
    with pytest.raises(LincheckError, match="before"):
        check_history(path)


def test_timeout_is_reported_as_such(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text("".join(
        f'{{"key":"k{i}","op":"get","call":1,"return":2,"result":null}}\n' for i in range(50)
    ))
    v = check_history(path, timeout_s=1e-9, jobs=1)
    assert not v.ok and v.exit_code == 2 and v.error == "timeout"
    assert v.timed_out and "timed out" in (v.message or "")


def test_missing_binary_says_run_make_setup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("P4CACHE_LINCHECK", "/nonexistent/p4cache-lincheck")
    with pytest.raises(LincheckError, match="not an executable"):
        find_binary()
    monkeypatch.delenv("P4CACHE_LINCHECK")
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr("p4cache.lincheck.check.BUILT", Path("/nonexistent/p4cache-lincheck"))
    with pytest.raises(LincheckError, match="run `make setup`"):
        find_binary()


# --- the recorder --------------------------------------------------------------------------------

class LockedStore:
    """A linearizable store: one lock around a dict."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.data: dict[str, str] = {}

    def apply(self, name: str, key: str, value: str | None) -> str | None:
        with self.lock:
            if name == "set":
                assert value is not None
                self.data[key] = value
                return "ok"
            if name == "delete":
                return "ok" if self.data.pop(key, None) is not None else "not_found"
            return self.data.get(key)


def test_recorder_threads_against_a_locked_store_are_linearizable(tmp_path: Path) -> None:
    store = LockedStore()
    path = tmp_path / "h.jsonl"
    with HistoryRecorder(path) as rec:

        def client(cid: int) -> None:
            rng = random.Random(cid)
            for i in range(300):
                key = f"k{rng.randrange(3)}"
                name = rng.choice(["get", "get", "set", "delete"])
                value = f"c{cid}-{i}" if name == "set" else None
                p = rec.begin(cid, name, key, value=value)  # type: ignore[arg-type]
                result = store.apply(name, key, value)
                if i % 50 == 7 and name != "get":
                    rec.unknown(p)  # pretend the reply was lost
                else:
                    rec.end(p, result)

        threads = [threading.Thread(target=client, args=(c,)) for c in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        never_returned = rec.begin(9, "set", "k0", value="maybe")
    ops = read_history(path)
    assert len(ops) == 4 * 300 + 1 and rec.count == len(ops)
    assert ops[-1] == Op(9, "k0", "set", never_returned.call, None, "unknown", "maybe", 0)
    assert all(o.ret is None or o.ret >= o.call for o in ops)
    assert_ok(check_history(path))


def test_recorder_history_with_a_stale_cache_read_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    cache: dict[str, str] = {}
    with HistoryRecorder(path) as rec:
        for value in ("v1", "v2"):
            rec.end(rec.begin(0, "set", "k", value=value), "ok")
            cache.setdefault("k", value)  # the broken cache keeps the first value
        rec.end(rec.begin(1, "get", "k"), cache["k"])
    assert_violation(check_history(path), "k")


# --- scale ---------------------------------------------------------------------------------------

def simulate(n: int, keys: int, seed: int) -> list[Op]:
    """A linearizable history by construction: op i takes effect at point i*100 us on a
    sequential memcached model (with TTL expiry inside the allowed window, deletes, and writes
    whose reply is lost, half of which are applied); its interval is the point +- up to 2 ms, so
    about 40 operations overlap at any time."""
    rng = random.Random(seed)
    data: dict[str, tuple[str, int]] = {}  # key -> (value, expiry point ns)
    ops: list[Op] = []
    for i in range(n):
        point = 1 * S + i * 100_000
        call, ret = point - rng.randrange(2 * MS), point + rng.randrange(2 * MS)
        key = f"key{rng.randrange(keys)}"
        item = data.get(key)
        if item is not None and item[1] <= point:
            del data[key]
            item = None
        r = rng.random()
        if r < 0.55:
            ops.append(Op(i % 64, key, "get", call, ret, item[0] if item else None))
        elif r < 0.9:
            ttl = rng.choice([0, 0, 0, 1, 2])
            value = f"v{i}"
            lost = rng.random() < 0.05
            if not lost or rng.random() < 0.5:
                expiry = point + ttl * S - 300 * MS if ttl else 2**62
                data[key] = (value, expiry)
            ops.append(Op(i % 64, key, "set", call, None if lost else ret,
                          "unknown" if lost else "ok", value, ttl))
        else:
            ops.append(Op(i % 64, key, "delete", call, ret, "ok" if item else "not_found"))
            data.pop(key, None)
    return ops


def timed_check(ops: list[Op], label: str) -> Verdict:
    t0 = time.monotonic()
    v = check_ops(ops, timeout_s=600)
    print(f"\nlincheck {label}: {len(ops)} ops, {v.keys} keys: {time.monotonic() - t0:.2f} s "
          f"(checker {v.ms} ms), ok={v.ok}")
    return v


def test_100k_simulated_operations_check() -> None:
    """A 100k-operation history is checked to the end (``timeout_s`` bounds a hang; how long it
    takes is printed, not asserted: that is a benchmark's question on a busy machine)."""
    ops = simulate(100_000, keys=100, seed=7)
    v = timed_check(ops, "100k simulated")
    assert_ok(v)
    assert v.operations == 100_000 and v.keys == 100
    # one corrupted get among them is found, on its key
    i = next(i for i, o in enumerate(ops) if o.op == "get" and o.result is not None and i > 50_000)
    bad = ops[i]
    ops[i] = Op(bad.client, bad.key, "get", bad.call, bad.ret, "never-written")
    vio = assert_violation(timed_check(ops, "100k with one bad get"), bad.key)
    assert any(o["result"] == "never-written" for o in vio["ops"])


@pytest.mark.skipif(not os.environ.get("P4CACHE_LINCHECK_BIG"), reason="set P4CACHE_LINCHECK_BIG=1")
def test_1m_simulated_operations() -> None:
    assert_ok(timed_check(simulate(1_000_000, keys=1000, seed=11), "1M simulated"))
