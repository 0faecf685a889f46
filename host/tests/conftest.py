"""Fixtures: a real memcached, an agent in front of it (agentkit.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from agentkit import Agent, Memcached


@pytest.fixture
def memcached() -> Iterator[Memcached]:
    m = Memcached()
    yield m
    m.stop()


@pytest.fixture
def agent(memcached: Memcached, tmp_path: Path) -> Iterator[Agent]:
    """An agent with an unreachable switch whose W the controller has synced to empty: writes
    pass without invalidation, flushes cannot be confirmed."""
    a = Agent(memcached, tmp_path / "agent.log", "-v")
    assert a.control.call({"op": "sync", "keys": []})["ok"]
    yield a
    a.stop()
    assert a.proc.returncode == 0, (tmp_path / "agent.log").read_text()[-3000:]
