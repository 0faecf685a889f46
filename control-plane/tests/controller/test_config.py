"""The JSON config: defaults, and errors that name the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from p4cache.controller.config import ConfigError, load

from .conftest import config_dict


def write(tmp_path: Path, d: dict) -> Path:
    p = tmp_path / "c.json"
    p.write_text(json.dumps(d))
    return p


@pytest.fixture
def good(tmp_path: Path, pipeline) -> dict:
    return config_dict("127.0.0.1:9559", pipeline, "127.0.0.1:11213")


def test_a_good_config_and_its_defaults(tmp_path: Path, good: dict) -> None:
    cfg = load(write(tmp_path, good))
    assert cfg.switch.election_id == (0, 1) and cfg.switch.cpu_port == 255
    assert cfg.servers[0].switch_port == 1 and cfg.servers[0].name == "m1"
    assert cfg.table_entries[0].action_params == {"port": "1"}
    assert cfg.cache.slots == 4096 and cfg.cache.ttl_margin_s == 2.0
    assert cfg.cache.epoch_s == 0.5
    assert cfg.clients == ["10.0.0.0/24"]


def test_program_from_a_p4_source_relative_to_the_repository(tmp_path: Path, good: dict
                                                             ) -> None:
    good["program"] = {"p4": "p4src/v1model/p4cache.p4", "defines": {"HOT_THRESHOLD": 4}}
    cfg = load(write(tmp_path, good))
    assert cfg.program.p4 is not None and cfg.program.p4.is_file()
    assert cfg.program.defines == {"HOT_THRESHOLD": 4}


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["servers"][0].update(ip="10.0.0.300"), "servers[0].ip: '10.0.0.300' is not"),
    (lambda d: d["servers"][0].pop("switch_port"), "servers[0].switch_port: missing"),
    (lambda d: d["servers"][0].update(switch_port=255), "servers[0].switch_port: 255 is the CPU"),
    (lambda d: d["servers"].append(dict(d["servers"][0], name="m2")),
     "servers[1].ip: 10.0.0.1 is also the address of m1"),
    (lambda d: d["servers"][0].update(agent="localhost"), "servers[0].agent: 'localhost' is not"),
    (lambda d: d["switch"].update(election_id=[1]), "switch.election_id: must be [high, low]"),
    (lambda d: d["switch"].update(grpc=9559), "switch.grpc: must be a string, not int"),
    (lambda d: d["switch"].update(grcp="x:1"), "switch: unknown field(s) ['grcp']"),
    (lambda d: d["cache"].update(slots=5000), "cache.slots: 5000 is out of range [1, 4096]"),
    (lambda d: d["cache"].update(ttl_margin_s=-1), "cache.ttl_margin_s: -1 is out of range"),
    (lambda d: d["cache"].update(epoch_s=True), "cache.epoch_s: must be an integer or a number"),
    (lambda d: d.update(clients=["10.0.0.1/24"]), "clients[0]: '10.0.0.1/24' is not an IPv4"),
    (lambda d: d["table_entries"][0].pop("table"), "table_entries[0].table: missing"),
    (lambda d: d["table_entries"][0]["match"].update(dst_addr=[1]),
     "table_entries[0].match.dst_addr: must be a string or an integer"),
    (lambda d: d.update(program={"bmv2_json": "nope.json", "p4info": "x"}),
     "program.bmv2_json: no such file 'nope.json'"),
    (lambda d: d.update(program={}), "program: needs p4"),
    (lambda d: d.pop("program"), "program: missing"),
    (lambda d: d.update(servers=[]), "servers: must be a non-empty list"),
    (lambda d: d.update(extra=1), "(top level): unknown field(s) ['extra']"),
    (lambda d: d.update(status_listen="11214"), "status_listen: '11214' is not HOST:PORT"),
])
def test_errors_name_the_file_and_the_field(tmp_path: Path, good: dict, change, message
                                            ) -> None:
    change(good)
    path = write(tmp_path, good)
    with pytest.raises(ConfigError) as e:
        load(path)
    assert str(e.value).startswith(f"{path}: ")
    assert message in str(e.value)


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"switch": ,}')
    with pytest.raises(ConfigError, match=r"bad.json: line 1 column 12: not JSON"):
        load(bad)
