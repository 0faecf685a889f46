"""The agent's own connection to memcached, for the controller's fetches: ``mg <key> v f t``."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

READ_TIMEOUT = 2.0


class FetchError(Exception):
    pass


@dataclass(frozen=True)
class Item:
    flags: int
    ttl: int          # seconds left, -1 for none
    value: bytes


class MemcachedReader:
    def __init__(self, addr: tuple[str, int]) -> None:
        self.addr = addr
        self._lock = asyncio.Lock()
        self._conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def get(self, key: bytes) -> Item | None:
        return (await self.get_many([key]))[0]

    async def get_many(self, keys: list[bytes]) -> list[Item | None]:
        """Items in one round trip: the requests pipelined, the replies in order."""
        async with self._lock:
            try:
                return await asyncio.wait_for(self._get_many(keys), READ_TIMEOUT)
            except (OSError, TimeoutError, asyncio.IncompleteReadError, FetchError) as e:
                self.close()
                what = repr(keys[0]) if len(keys) == 1 else f"of {len(keys)} keys"
                raise FetchError(f"mg {what}: {e or type(e).__name__}") from None

    async def _get_many(self, keys: list[bytes]) -> list[Item | None]:
        if self._conn is None:
            self._conn = await asyncio.open_connection(*self.addr)
        self._conn[1].write(b"".join(b"mg " + k + b" v f t\r\n" for k in keys))
        return [await self._read_item() for _ in keys]

    async def _read_item(self) -> Item | None:
        assert self._conn is not None
        reader = self._conn[0]
        line = await reader.readuntil(b"\r\n")
        if line == b"EN\r\n":
            return None
        parts = line.split()
        if parts[:1] != [b"VA"] or len(parts) < 2:
            raise FetchError(f"memcached answered {line[:100]!r}")
        size = int(parts[1])
        data = await reader.readexactly(size + 2)
        flags = {p[:1]: p[1:] for p in parts[2:]}
        return Item(flags=int(flags.get(b"f", b"0")), ttl=int(flags.get(b"t", b"-1")),
                    value=data[:size])

    def close(self) -> None:
        if self._conn is not None:
            self._conn[1].close()
            self._conn = None
