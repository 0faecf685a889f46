"""p4cache.ring.HashRing: pinned values (a change in hashing is a change of every deployment's
key placement), independence from server order, balance, and minimal movement."""

from __future__ import annotations

from collections import Counter

import pytest

from p4cache.ring import HashRing, key_point, server_points

KEYS = [f"key:{i}" for i in range(10_000)]
SERVERS = [f"10.0.0.{i}:11211" for i in range(1, 9)]


def owners(ring: HashRing) -> dict[str, str]:
    return {k: ring.owner(k) for k in KEYS}


def test_pinned_hash_values() -> None:
    assert key_point("foo") == 0xDB18BDAC  # md5("foo") = acbd18db..., first 4 bytes little-endian
    assert server_points("m1")[:4] == [1871804840, 852163553, 2107680910, 2987288984]
    ring = HashRing(SERVERS[:3])
    assert {k: ring.owner(k) for k in ["foo", "bar", "key:0", "key:1", "key:2", "user:42"]} == {
        "foo": "10.0.0.3:11211",
        "bar": "10.0.0.1:11211",
        "key:0": "10.0.0.3:11211",
        "key:1": "10.0.0.2:11211",
        "key:2": "10.0.0.2:11211",
        "user:42": "10.0.0.1:11211",
    }


def test_same_ring_whatever_the_server_order_or_duplicates() -> None:
    a = HashRing(SERVERS[:5])
    b = HashRing(list(reversed(SERVERS[:5])) + [SERVERS[0]])
    assert a.servers == b.servers and len(b) == 5
    assert owners(a) == owners(b)


def test_str_and_bytes_keys_agree() -> None:
    ring = HashRing(SERVERS[:4])
    for k in ["foo", "key:17", "caf\xe9", ""]:
        assert ring.owner(k) == ring.owner(k.encode("latin-1"))
    assert ring.owner(bytearray(b"foo")) == ring.owner("foo")  # type: ignore[arg-type]


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_balance_over_10k_keys(n: int) -> None:
    counts = Counter(owners(HashRing(SERVERS[:n])).values())
    assert set(counts) == set(SERVERS[:n])
    fair = len(KEYS) / n
    for server, c in counts.items():
        assert 0.8 * fair <= c <= 1.2 * fair, (server, c, fair)


def test_adding_a_server_moves_only_about_1_over_n_keys_all_to_it() -> None:
    before = owners(HashRing(SERVERS[:4]))
    after = owners(HashRing(SERVERS[:4]).with_server(SERVERS[4]))
    moved = [k for k in KEYS if before[k] != after[k]]
    assert {after[k] for k in moved} == {SERVERS[4]}
    assert 0.8 / 5 <= len(moved) / len(KEYS) <= 1.2 / 5, len(moved)


def test_removing_a_server_moves_only_its_keys() -> None:
    ring = HashRing(SERVERS[:5])
    before = owners(ring)
    after = owners(ring.without_server(SERVERS[2]))
    moved = {k for k in KEYS if before[k] != after[k]}
    assert moved == {k for k in KEYS if before[k] == SERVERS[2]}
    assert SERVERS[2] not in after.values()
    assert 0.8 / 5 <= len(moved) / len(KEYS) <= 1.2 / 5, len(moved)


def test_vnodes_and_errors() -> None:
    assert len(server_points("s", 10)) == 10 and len(server_points("s")) == 160
    assert server_points("s", 10) == server_points("s")[:10]
    one = HashRing(["only"], vnodes=1)
    assert {one.owner(k) for k in KEYS[:100]} == {"only"}
    with pytest.raises(ValueError):
        HashRing([])
    with pytest.raises(ValueError):
        HashRing(["a"], vnodes=0)
    with pytest.raises(KeyError):
        HashRing(["a", "b"]).without_server("c")
