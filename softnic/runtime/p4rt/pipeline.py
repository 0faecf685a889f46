"""Forwarding pipeline configs: verification and the committed (or saved) pipeline.

VERIFY checks that the config could be committed: the P4Info parses into an index, the device
config is BMv2 JSON in one of the two accepted forms, and the P4Info's tables and actions match
the JSON - a P4Info from another program would otherwise load fine and then fail on the first
Write with confusing errors. A table p4c's mid end removed (it can never be applied) stays in the
P4Info but not in the JSON, and BMv2 accepts that pair; so does softnic (the table is marked
``in_json = False``). An action may be missing only when no table still in the JSON uses it.
Only the real load (``Switch.load_json``) proves the JSON fully, so VERIFY accepts a superset of
what COMMIT does; BMv2 behaves the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from p4.v1 import p4runtime_pb2

from .devconfig import parse_device_config
from .errors import invalid
from .p4info import P4InfoIndex


@dataclass
class PipelineConfig:
    config: p4runtime_pb2.ForwardingPipelineConfig  # as sent, device config bytes included
    bmv2_json: dict
    index: P4InfoIndex


def _json_names(bmv2_json: dict, section: str) -> set[str]:
    items = bmv2_json.get(section, [])
    if not isinstance(items, list):
        return set()
    return {i.get("name") for i in items if isinstance(i, dict)}


def _json_tables(bmv2_json: dict) -> set[str]:
    names: set[str] = set()
    pipelines = bmv2_json.get("pipelines", [])
    if not isinstance(pipelines, list):
        raise invalid("BMv2 JSON: 'pipelines' must be a list")
    for p in pipelines:
        if isinstance(p, dict) and isinstance(p.get("tables", []), list):
            names |= {t.get("name") for t in p.get("tables", []) if isinstance(t, dict)}
    return names


def verify(config: p4runtime_pb2.ForwardingPipelineConfig) -> PipelineConfig:
    bmv2_json = parse_device_config(config.p4_device_config)
    index = P4InfoIndex(config.p4info)
    tables = _json_tables(bmv2_json)
    for t in index.tables.values():
        t.in_json = t.name in tables
    actions = _json_names(bmv2_json, "actions")
    short = {a.rsplit(".", 1)[-1] for a in actions if isinstance(a, str)}
    used = set().union(*(t.action_ids for t in index.tables.values() if t.in_json))
    missing = [a.name for a in index.actions.values()
               if a.name not in actions and a.name.rsplit(".", 1)[-1] not in short
               and a.id in used]
    if missing:
        raise invalid(f"P4Info action(s) not in the BMv2 JSON: {', '.join(sorted(missing))}")
    return PipelineConfig(config, bmv2_json, index)
