"""What the controller does on every (re)connect to the switch.

- Static state, idempotent: the config's table entries, client_allowlist, trusted_agents and
  the hot-key DigestEntry (insert, or modify what is already there).
- The cache, rebuilt from the switch itself, which is the only truth that survives a controller
  restart: the cache_lookup entries read back, each slot's version by OP_READ. Every agent's
  watch set is synced to exactly the keys found. Then every key found is refreshed (reserve,
  fetch, fill): the TTL deadlines were lost with the old controller, and a refresh learns them.
- After a switch restart the pipeline was pushed again (the cookie was gone), the read-back
  finds nothing, the agents are synced to empty sets and the cache starts empty.

Why nothing stale is served while the switch is unreachable from the controller:
- if the switch restarted, its registers and tables started empty: it answers no GET until a
  controller fills a slot again;
- if only the P4Runtime channel is down and the switch keeps running, its entries stay
  coherent without the controller: writes seen by the switch (UDP) invalidate in the data
  plane; TCP writes go through the agents' gates, which invalidate over the data network, not
  through the controller; a flush moves the data plane's generation on; and TTL expiry is
  covered by the agents, which schedule an OP_INVALIDATE_KEY at fetch + ttl - margin for every
  item they hand out. Nothing can be filled without the controller, so no new value appears.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from p4cache import dataplane as dp

from .cache import CacheState, Entry, Phase
from .config import Config
from .p4rt import Switch
from .policy import PromotionPolicy
from .promote import SET_SLOT, Workflows
from .updates import Endpoint, Updates

log = logging.getLogger("p4cache.controller.recovery")
DIGEST_LIST = 64
DIGEST_WAIT_NS = 2_000_000


@dataclass
class Recovered:
    entries: int = 0                                     # kept and being refreshed
    dropped: list[str] = field(default_factory=list)     # entries deleted, and why


def install_static(switch: Switch, cfg: Config) -> int:
    """Forwarding and trust entries from the config, idempotently; returns how many."""
    n = 0
    for t in cfg.table_entries:
        switch.install(switch.entry(t.table, t.match, t.action_name, t.action_params,
                                    t.priority, default=t.default_action))
        n += 1
    for prefix in cfg.clients:
        switch.install(switch.entry(dp.TABLE_ALLOWLIST, {"src_addr": prefix},
                                    "CacheIngress.lookup.allow_client"))
        n += 1
    for s in cfg.servers:
        switch.install(switch.entry(dp.TABLE_AGENTS, {"ingress_port": str(s.switch_port),
                                                      "src_addr": s.ip},
                                    "CacheIngress.control_trust.trust_agent"))
        n += 1
    # Digests batched into lists of up to 64, none waiting more than 2 ms: a burst of reports
    # (a low admission threshold, a moving hot set) is a few stream messages rather than one
    # per key, so it cannot crowd the control datagrams' acks out of the switch's queue to the
    # controller. A list not acknowledged within 1 s may be sent again.
    switch.enable_digest(dp.DIGEST_HOT_KEY, max_timeout_ns=DIGEST_WAIT_NS,
                         max_list_size=DIGEST_LIST, ack_timeout_ns=10**9)
    return n


def recover(cfg: Config, switch: Switch, updates: Updates, cache: CacheState,
            policy: PromotionPolicy, flows: Workflows,
            sync: Callable[[str, set[bytes]], None]) -> Recovered:
    """Rebuild ``cache`` (empty on entry) from the switch, sync agents, start the refreshes."""
    out = Recovered()
    servers = {s.ip: Endpoint(s.ip, s.mac) for s in cfg.servers}
    found: list[Entry] = []
    strays: list[int] = []
    for row in switch.read_entries(dp.TABLE_LOOKUP):
        server = str(ipaddress.IPv4Address(int(row.match["server_addr"])))  # type: ignore[arg-type]
        slot = row.params.get("slot", -1)
        why = None
        try:
            key = dp.key_from_match(int(row.match["key_len"]),  # type: ignore[arg-type]
                                    int(row.match["key"]))  # type: ignore[arg-type]
        except ValueError as e:
            key, why = b"", f"bad key ({e})"
        if why is None and row.action != SET_SLOT:
            why = f"action {row.action}"
        elif why is None and server not in servers:
            why = "server not in the config"
        elif why is None and not 0 <= slot < cfg.cache.slots:
            why = f"slot {slot} beyond the {cfg.cache.slots} configured"
        elif why is None and slot in cache.by_slot:
            why = f"slot {slot} also used by {cache.by_slot[slot].key!r}"
        if why is not None:
            # Delete first; the slot is invalidated below before anything reuses it.
            te = switch.entry(dp.TABLE_LOOKUP, {
                "server_addr": server, "key_len": str(row.match["key_len"]),
                "key": str(row.match["key"])})
            switch.delete(te)
            out.dropped.append(f"{server} {key!r} slot {slot}: {why}")
            if 0 <= slot < dp.CACHE_SLOTS:
                strays.append(slot)
            continue
        e = Entry(server, key, slot, phase=Phase.RESERVED, installed=True)
        cache.add(e)
        policy.slots.take(slot)
        found.append(e)
    # Versions of every slot in use (and of strays, which are invalidated at once).
    reads = [(servers[e.server], e.slot) for e in found]
    any_ep = next(iter(servers.values()))
    reads += [(any_ep, s) for s in strays if s not in cache.by_slot]
    if reads:
        acks = updates.request_many([(ep, dp.read_datagram(s)) for ep, s in reads])
        for (_, slot), ack in zip(reads, acks, strict=True):
            cache.versions[slot] = ack.version
    for slot in strays:
        if slot not in cache.by_slot:
            v = cache.versions.get(slot, 0) + 1
            updates.update(any_ep, slot, v, b"")
            cache.versions[slot] = v
    # W := the keys with an entry, before any of them is filled again (the refreshes' fetches
    # are queued behind the sync on each agent's one ordered channel).
    for ip in servers:
        sync(ip, {e.key for e in found if e.server == ip})
    for e in found:
        flows.refresh(e)
    out.entries = len(found)
    if out.dropped:
        log.warning("recovery deleted %d entries: %s", len(out.dropped), "; ".join(out.dropped))
    log.info("recovered %d cached keys from the switch", out.entries)
    return out
