"""Shared helpers for the engine tests: load a fixture into a fresh Switch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from softnic.runtime.switch import Switch

FIXTURES = Path(__file__).parent / "fixtures"


def fixture_json(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def load_switch(name: str, **kw: Any) -> Switch:
    sw = Switch(**kw)
    sw.load_json(fixture_json(name))
    return sw
