"""Real memcached clients through the gate: pymemcache and libmemcached-tools (memccp,
memccat, memcrm, memctouch, memcflush). W is synced to one watched key: writes to it need the
(unreachable) switch and must fail the client's way; everything else works as with memcached."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from agentkit import Agent, Memcached, exchange
from pymemcache.client.base import Client
from pymemcache.exceptions import MemcacheServerError


@pytest.fixture
def gated(memcached: Memcached, tmp_path: Path):  # noqa: ANN201
    a = Agent(memcached, tmp_path / "agent.log", "--deadline", "0.2")
    assert a.control.call({"op": "sync", "keys": ["watched"]})["ok"]
    yield a
    a.stop()


def test_pymemcache(gated: Agent, memcached: Memcached) -> None:
    c = Client(("127.0.0.1", gated.port), timeout=5)
    assert c.set("a", b"1", noreply=False)
    assert c.get("a") == b"1"
    assert c.add("a", b"2", noreply=False) is False
    assert c.replace("a", b"3", noreply=False)
    assert c.append("a", b"4", noreply=False) and c.prepend("a", b"0", noreply=False)
    assert c.get("a") == b"034"
    assert c.incr("a", 5) == 39 and c.decr("a", 40) == 0
    value, cas = c.gets("a")
    assert c.cas("a", b"x", cas, noreply=False) and not c.cas("a", b"y", cas, noreply=False)
    assert c.touch("a", 100, noreply=False)
    c.set_many({"m1": b"v1", "m2": b"v2" * 400_000}, noreply=True)   # noreply pipeline
    assert c.get_many(["m1", "m2", "nope", "a"]) == {"m1": b"v1", "m2": b"v2" * 400_000,
                                                     "a": b"x"}
    assert c.delete("m1", noreply=False) and not c.delete("m1", noreply=False)
    assert c.raw_command(b"gat 50 a", b"END\r\n") == b"VALUE a 0 1\r\nx\r\n"
    assert c.version().startswith(b"1.6")
    stats = c.stats()
    assert stats[b"curr_connections"] >= 1
    # the watched key: refused, and memcached never sees the write
    with pytest.raises(MemcacheServerError, match="invalidation not confirmed"):
        c.set("watched", b"v", noreply=False)
    c.set("watched", b"v", noreply=True)
    with pytest.raises(MemcacheServerError):
        c.flush_all(noreply=False)
    assert c.get("watched") is None
    assert c.get("a") == b"x"      # the connection is still in step
    c.close()
    assert exchange(memcached.port, b"get watched a\r\n") == b"VALUE a 0 1\r\nx\r\nEND\r\n"


TOOLS = ["memccp", "memccat", "memcrm", "memctouch", "memcflush"]


@pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS),
                    reason="libmemcached-tools not installed")
def test_libmemcached_tools(gated: Agent, memcached: Memcached, tmp_path: Path) -> None:
    servers = f"--servers=127.0.0.1:{gated.port}"

    def tool(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(list(argv), capture_output=True, timeout=30, cwd=tmp_path,
                              check=False)

    f = tmp_path / "blob"
    f.write_bytes(bytes(range(256)) * 2000)
    r = tool("memccp", servers, str(f))
    assert r.returncode == 0, r.stderr
    r = tool("memccat", servers, "blob")
    assert r.returncode == 0 and r.stdout == f.read_bytes() + b"\n"   # memccat adds one
    assert tool("memctouch", servers, "--expire=100", "blob").returncode == 0
    assert tool("memcrm", servers, "blob").returncode == 0
    assert tool("memccat", servers, "blob").returncode != 0
    # the watched key and a flush need the switch, which does not answer
    w = tmp_path / "watched"
    w.write_bytes(b"v")
    assert tool("memccp", servers, str(w)).returncode != 0
    assert tool("memcflush", servers).returncode != 0
    assert exchange(memcached.port, b"get watched\r\n") == b"END\r\n"
    assert gated.alive()
