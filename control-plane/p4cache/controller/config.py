"""The controller's JSON configuration: read, checked field by field, with defaults.

    {
      "switch": {"grpc": "127.0.0.1:9559", "device_id": 0, "election_id": [0, 1],
                 "cpu_port": 255, "ctrl_ip": "10.0.0.254", "ctrl_mac": "02:00:00:00:00:fe"},
      "program": {"p4": "p4src/v1model/p4cache.p4", "defines": {}}
                 or {"bmv2_json": "F.json", "p4info": "F.p4info.txt"},
      "servers": [{"name": "m1", "ip": "10.0.0.1", "mac": "02:00:00:00:00:01",
                   "switch_port": 1, "agent": "127.0.0.1:11213"}],
      "clients": ["10.0.0.0/24"],                    -> client_allowlist
      "table_entries": [{"table": "...", "match": {"f": "v"}, "action_name": "...",
                         "action_params": {"p": 1}, "priority": 0, "default_action": false}],
      "cache": {"slots": 4096, "ttl_margin_s": 2.0, "epoch_s": 1.0, "ema_alpha": 0.5,
                "hotter_factor": 1.0, "max_inflight": 64, "fill_attempts": 3,
                "ack_timeout_s": 0.05, "ack_attempts": 6, "agent_timeout_s": 5.0,
                "threshold_min": 1, "threshold_max": 4095, "digest_budget": 1000},
      "status_listen": "127.0.0.1:11214"
    }

Only ``program`` and ``servers`` are required. Each server also gets a trusted_agents entry
(switch_port, ip); ``ctrl_ip``/``ctrl_mac`` are the destination of the control frames the
controller sends as packet-outs (the switch takes them from the CPU port whatever the address).

Every error names the file and the field (``controller.json: servers[1].ip: ...``) so a wrong
config is fixed without reading this code. Relative paths are taken from the config file's
directory, and for ``program.p4`` also from p4cache's data root (``p4src/...``: the repository
root, or the installed package data; p4cache.paths).
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from p4cache import agent_protocol as proto
from p4cache import dataplane as dp
from p4cache import paths

MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class SwitchConfig:
    grpc: str = "127.0.0.1:9559"
    device_id: int = 0
    election_id: tuple[int, int] = (0, 1)
    cpu_port: int = dp.CPU_PORT
    # Destination of the control frames sent as packet-outs. The switch intercepts UDP
    # CACHE_CTRL_PORT from the CPU port whatever the destination; these only make the frame
    # a well-formed one (and the ack's source).
    ctrl_ip: str = "10.0.0.254"
    ctrl_mac: str = "02:00:00:00:00:fe"


@dataclass(frozen=True)
class ProgramConfig:
    p4: Path | None = None
    bmv2_json: Path | None = None
    p4info: Path | None = None
    defines: dict[str, str | int] = field(default_factory=dict)


@dataclass(frozen=True)
class ServerConfig:
    name: str
    ip: str
    mac: str
    switch_port: int
    agent: str  # host:port of the agent's control channel


@dataclass(frozen=True)
class TableEntryConfig:
    """One entry in p4lang/tutorials runtime_json style, by P4Runtime names."""

    table: str
    match: dict[str, str]
    action_name: str
    action_params: dict[str, str]
    priority: int = 0
    default_action: bool = False


@dataclass(frozen=True)
class CacheConfig:
    slots: int = dp.CACHE_SLOTS
    ttl_margin_s: float = 2.0       # an entry leaves the switch this long before its item expires
    epoch_s: float = 1.0            # counter polls and the policy's frequency estimates
    ema_alpha: float = 0.5          # weight of the newest epoch in the frequency estimate
    hotter_factor: float = 1.0      # a candidate must be this many times hotter than the victim
    max_inflight: int = 64          # promotions between reserve and fill at once
    fill_attempts: int = 3          # reserve/fetch/fill rounds before a promotion gives up
    ack_timeout_s: float = 0.05     # first wait for a control datagram's ack (then doubled)
    ack_attempts: int = 6           # transmissions of one control datagram
    agent_timeout_s: float = 5.0    # one agent request (its fence waits up to 2 s)
    # The data plane's report threshold (misses per data-plane epoch) moves within these
    # bounds (policy/admission.py); equal bounds fix it.
    threshold_min: int = 1
    threshold_max: int = 4095
    digest_budget: float = 1000.0   # reports/s above which the threshold goes up


@dataclass(frozen=True)
class Config:
    path: Path
    switch: SwitchConfig
    program: ProgramConfig
    servers: list[ServerConfig]
    clients: list[str]
    table_entries: list[TableEntryConfig]
    cache: CacheConfig
    status_listen: str

    def server_by_ip(self, ip: str) -> ServerConfig | None:
        return next((s for s in self.servers if s.ip == ip), None)


# ------------------------------------------------------------------------------- checkers


class _Reader:
    """Typed access to one JSON object, raising ConfigError that names ``where``."""

    def __init__(self, path: Path, where: str, obj: Any) -> None:
        self.path = path
        self.where = where
        if not isinstance(obj, dict):
            self.fail(f"must be an object, not {type(obj).__name__}")
        self.obj: dict[str, Any] = obj

    def fail(self, msg: str, name: str | None = None) -> NoReturn:
        at = self.where + (f".{name}" if name and self.where else name or "")
        raise ConfigError(f"{self.path}: {at or '(top level)'}: {msg}")

    def unknown(self, allowed: set[str]) -> None:
        extra = sorted(set(self.obj) - allowed)
        if extra:
            self.fail(f"unknown field(s) {extra}; allowed: {sorted(allowed)}")

    def sub(self, name: str, required: bool = False) -> _Reader:
        if name not in self.obj:
            if required:
                self.fail("missing", name)
            return _Reader(self.path, self._at(name), {})
        return _Reader(self.path, self._at(name), self.obj[name])

    def _at(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else name

    def get(self, name: str, kind: type | tuple[type, ...], default: Any = None,
            required: bool = False) -> Any:
        if name not in self.obj:
            if required:
                self.fail("missing", name)
            return default
        v = self.obj[name]
        if isinstance(v, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            self.fail(f"must be {_kind_name(kind)}, not a boolean", name)
        if not isinstance(v, kind):
            self.fail(f"must be {_kind_name(kind)}, not {type(v).__name__} {v!r}", name)
        return v

    def number(self, name: str, default: float, lo: float, hi: float | None = None) -> float:
        v = self.get(name, (int, float), default)
        if v < lo or (hi is not None and v > hi):
            self.fail(f"{v} is out of range [{lo}, {hi if hi is not None else 'inf'}]", name)
        return float(v)

    def integer(self, name: str, default: int | None, lo: int, hi: int,
                required: bool = False) -> int:
        v = self.get(name, int, default, required)
        if not lo <= v <= hi:
            self.fail(f"{v} is out of range [{lo}, {hi}]", name)
        return v


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {int: "an integer", float: "a number", str: "a string", list: "a list",
             dict: "an object", bool: "true or false"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _ipv4(r: _Reader, name: str, value: str) -> str:
    try:
        return str(ipaddress.IPv4Address(value))
    except ValueError:
        r.fail(f"{value!r} is not an IPv4 address", name)


def _host_port(r: _Reader, name: str, value: str) -> str:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        r.fail(f"{value!r} is not HOST:PORT", name)
    return value


def _mac(r: _Reader, name: str, value: str) -> str:
    if not MAC_RE.match(value):
        r.fail(f"{value!r} is not a MAC address (aa:bb:cc:dd:ee:ff)", name)
    return value.lower()


def _path(r: _Reader, name: str, value: str, also: Path | None = None) -> Path:
    p = Path(value)
    if not p.is_absolute():
        first = r.path.parent / p
        p = first if first.exists() or also is None else also / p
    if not p.is_file():
        r.fail(f"no such file {value!r} (looked at {p})", name)
    return p


def _switch(r: _Reader) -> SwitchConfig:
    r.unknown({"grpc", "device_id", "election_id", "cpu_port", "ctrl_ip", "ctrl_mac"})
    d = SwitchConfig()
    election = r.get("election_id", list, list(d.election_id))
    if len(election) != 2 or not all(isinstance(x, int) and not isinstance(x, bool)
                                      and 0 <= x < 1 << 64 for x in election):
        r.fail(f"must be [high, low], two 64-bit integers, not {election!r}", "election_id")
    if election == [0, 0]:
        r.fail("[0, 0] is not a valid election id", "election_id")
    return SwitchConfig(
        grpc=_host_port(r, "grpc", r.get("grpc", str, d.grpc)),
        device_id=r.integer("device_id", d.device_id, 0, (1 << 64) - 1),
        election_id=(election[0], election[1]),
        cpu_port=r.integer("cpu_port", d.cpu_port, 0, 511),
        ctrl_ip=_ipv4(r, "ctrl_ip", r.get("ctrl_ip", str, d.ctrl_ip)),
        ctrl_mac=_mac(r, "ctrl_mac", r.get("ctrl_mac", str, d.ctrl_mac)),
    )


def _program(r: _Reader) -> ProgramConfig:
    r.unknown({"p4", "bmv2_json", "p4info", "defines"})
    defines = r.get("defines", dict, {})
    for k, v in defines.items():
        if not isinstance(v, str | int) or isinstance(v, bool):
            r.fail(f"define {k!r} must be a string or an integer", "defines")
    if "p4" in r.obj:
        if "bmv2_json" in r.obj or "p4info" in r.obj:
            r.fail("give either p4 or bmv2_json + p4info, not both")
        return ProgramConfig(p4=_path(r, "p4", r.get("p4", str), also=paths.data_root()),
                             defines=dict(defines))
    if "bmv2_json" not in r.obj or "p4info" not in r.obj:
        r.fail("needs p4 (a P4 source to compile) or both bmv2_json and p4info")
    if defines:
        r.fail("defines only apply to a p4 source", "defines")
    return ProgramConfig(bmv2_json=_path(r, "bmv2_json", r.get("bmv2_json", str)),
                         p4info=_path(r, "p4info", r.get("p4info", str)))


def _servers(path: Path, items: Any, cpu_port: int) -> list[ServerConfig]:
    if not isinstance(items, list) or not items:
        raise ConfigError(f"{path}: servers: must be a non-empty list")
    out: list[ServerConfig] = []
    for i, obj in enumerate(items):
        r = _Reader(path, f"servers[{i}]", obj)
        r.unknown({"name", "ip", "mac", "switch_port", "agent"})
        ip = _ipv4(r, "ip", r.get("ip", str, required=True))
        s = ServerConfig(
            name=r.get("name", str, ip),
            ip=ip,
            mac=_mac(r, "mac", r.get("mac", str, "02:00:00:00:00:01")),
            switch_port=r.integer("switch_port", None, 0, 511, required=True),
            agent=_host_port(r, "agent", r.get("agent", str, f"127.0.0.1:{proto.DEFAULT_PORT}")),
        )
        if s.switch_port == cpu_port:
            r.fail(f"{s.switch_port} is the CPU port", "switch_port")
        for other in out:
            if other.ip == s.ip:
                r.fail(f"{s.ip} is also the address of {other.name}", "ip")
            if other.name == s.name:
                r.fail(f"name {s.name!r} is used twice", "name")
        out.append(s)
    return out


def _clients(path: Path, items: Any) -> list[str]:
    if not isinstance(items, list):
        raise ConfigError(f"{path}: clients: must be a list of IPv4 prefixes")
    out = []
    for i, v in enumerate(items):
        try:
            out.append(str(ipaddress.IPv4Network(v, strict=True)))
        except (ValueError, TypeError) as e:
            raise ConfigError(f"{path}: clients[{i}]: {v!r} is not an IPv4 prefix ({e})") from None
    return out


def _scalar(r: _Reader, where: str, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | str):
        r.fail(f"must be a string or an integer, not {value!r}", where)
    return str(value)


def _table_entries(path: Path, items: Any) -> list[TableEntryConfig]:
    if not isinstance(items, list):
        raise ConfigError(f"{path}: table_entries: must be a list")
    out = []
    for i, obj in enumerate(items):
        r = _Reader(path, f"table_entries[{i}]", obj)
        r.unknown({"table", "match", "action_name", "action_params", "priority",
                   "default_action"})
        match = r.get("match", dict, {})
        params = r.get("action_params", dict, {})
        default = r.get("default_action", bool, False)
        if not match and not default:
            r.fail("an entry needs a match (or default_action: true)", "match")
        out.append(TableEntryConfig(
            table=r.get("table", str, required=True),
            match={k: _scalar(r, f"match.{k}", v) for k, v in match.items()},
            action_name=r.get("action_name", str, required=True),
            action_params={k: _scalar(r, f"action_params.{k}", v) for k, v in params.items()},
            priority=r.integer("priority", 0, 0, (1 << 31) - 1),
            default_action=default,
        ))
    return out


def _cache(r: _Reader) -> CacheConfig:
    d = CacheConfig()
    r.unknown(set(CacheConfig.__dataclass_fields__))
    c = CacheConfig(
        slots=r.integer("slots", d.slots, 1, dp.CACHE_SLOTS),
        ttl_margin_s=r.number("ttl_margin_s", d.ttl_margin_s, 0.0),
        epoch_s=r.number("epoch_s", d.epoch_s, 0.05, 3600.0),
        ema_alpha=r.number("ema_alpha", d.ema_alpha, 0.01, 1.0),
        hotter_factor=r.number("hotter_factor", d.hotter_factor, 1.0),
        max_inflight=r.integer("max_inflight", d.max_inflight, 1, 1024),
        fill_attempts=r.integer("fill_attempts", d.fill_attempts, 1, 100),
        ack_timeout_s=r.number("ack_timeout_s", d.ack_timeout_s, 0.001, 10.0),
        ack_attempts=r.integer("ack_attempts", d.ack_attempts, 1, 100),
        agent_timeout_s=r.number("agent_timeout_s", d.agent_timeout_s, 0.1, 600.0),
        threshold_min=r.integer("threshold_min", d.threshold_min, 1, dp.THRESHOLD_MAX),
        threshold_max=r.integer("threshold_max", d.threshold_max, 1, dp.THRESHOLD_MAX),
        digest_budget=r.number("digest_budget", d.digest_budget, 1.0, 1e7),
    )
    if c.threshold_min > c.threshold_max:
        r.fail(f"threshold_min {c.threshold_min} is above threshold_max {c.threshold_max}",
               "threshold_min")
    return c


def parse(obj: Any, path: Path) -> Config:
    """Check a decoded config (``path`` is where it came from, for messages and relative
    paths)."""
    top = _Reader(path, "", obj)
    top.unknown({"switch", "program", "servers", "clients", "table_entries", "cache",
                 "status_listen"})
    switch = _switch(top.sub("switch"))
    status = top.get("status_listen", str, "127.0.0.1:11214")
    return Config(
        path=path,
        switch=switch,
        program=_program(top.sub("program", required=True)),
        servers=_servers(path, obj.get("servers"), switch.cpu_port),
        clients=_clients(path, obj.get("clients", [])),
        table_entries=_table_entries(path, obj.get("table_entries", [])),
        cache=_cache(top.sub("cache")),
        status_listen=_host_port(top, "status_listen", status),
    )


def load(path: str | Path) -> Config:
    """Read and check the config file; raises ConfigError with a message for the user."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: line {e.lineno} column {e.colno}: not JSON: {e.msg}") from None
    return parse(obj, path)
