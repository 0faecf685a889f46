"""Consistent hashing of memcached keys to servers, shared by clients, the controller and the
benchmarks so that all of them agree on which server owns a key.

Ketama-style: each server gets `vnodes` points on a 32-bit circle, four per MD5 digest of
"<server>-<i>" (bytes 4j..4j+3 of the digest, little-endian, as libketama does); a key belongs to
the server of the first point at or after the key's own point (the first four bytes of MD5(key),
little-endian), wrapping around. The points depend only on the server names, so the ring is the
same whatever order the servers are given in, and adding or removing one server moves only the
keys whose arc it gains or loses (about 1/n of them).

Keys: bytes as sent to memcached; a str is encoded latin-1, the project's convention for text keys
(bytes.decode("latin-1") round-trips exactly).
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Iterable

DEFAULT_VNODES = 160


def _key_bytes(key: bytes | str) -> bytes:
    return key.encode("latin-1") if isinstance(key, str) else bytes(key)


def key_point(key: bytes | str) -> int:
    """The key's position on the circle, 0 <= p < 2**32."""
    return int.from_bytes(hashlib.md5(_key_bytes(key)).digest()[:4], "little")


def server_points(server: str, vnodes: int = DEFAULT_VNODES) -> list[int]:
    """The server's `vnodes` positions on the circle."""
    points: list[int] = []
    for i in range((vnodes + 3) // 4):
        digest = hashlib.md5(f"{server}-{i}".encode()).digest()
        points.extend(int.from_bytes(digest[4 * j : 4 * j + 4], "little") for j in range(4))
    return points[:vnodes]


class HashRing:
    """An immutable ring; owner(key) -> server name."""

    def __init__(self, servers: Iterable[str], vnodes: int = DEFAULT_VNODES) -> None:
        names = sorted(set(servers))
        if not names:
            raise ValueError("a hash ring needs at least one server")
        if vnodes < 1:
            raise ValueError("vnodes must be >= 1")
        self.vnodes = vnodes
        self.servers: tuple[str, ...] = tuple(names)
        # (point, server): equal points (rare) go to the smaller name, whatever the input order
        ring = sorted((p, s) for s in names for p in server_points(s, vnodes))
        self._points = [p for p, _ in ring]
        self._owners = [s for _, s in ring]

    def owner(self, key: bytes | str) -> str:
        i = bisect.bisect_left(self._points, key_point(key))
        return self._owners[i if i < len(self._points) else 0]

    def with_server(self, server: str) -> HashRing:
        return HashRing([*self.servers, server], self.vnodes)

    def without_server(self, server: str) -> HashRing:
        if server not in self.servers:
            raise KeyError(server)
        return HashRing([s for s in self.servers if s != server], self.vnodes)

    def __len__(self) -> int:
        return len(self.servers)

    def __repr__(self) -> str:
        return f"HashRing({list(self.servers)!r}, vnodes={self.vnodes})"
