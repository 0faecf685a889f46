"""Promotion, eviction and TTL workflows (docs/update-protocol.md), run by the worker thread.

Promotion of (server, key), in rounds of three steps whose order is the protocol:
1. reserve: OP_UPDATE(slot, v, length 0) — the slot is invalid and not written — and only
   then the cache_lookup entry (server, key) -> slot. From here on every write to the key that
   the switch sees marks the slot;
2. fetch: the server's agent reads the item once no earlier write is in flight (its fence), and
   watches the key from then on (asynchronous: the result comes back as an event);
3. fill: OP_UPDATE(slot, v + 1, the reply memcached would send). `written` means a write went
   by after step 1, so the value may be old: start again from step 1 with a newer version, a
   bounded number of times.
A promotion is given up (the entry deleted, the slot invalidated, the key unwatched) when the
item does not exist, its reply does not fit REPLY_MAX, its TTL is within the margin, or the agent
is busy or unreachable.

Eviction: delete the entry, then invalidate the slot with a newer version, then unwatch.
TTL: an entry leaves (eviction) before fetch time + ttl - margin; the fetch time taken is when
the request was sent, which is no later than when the agent read the item.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.rpc import code_pb2

from p4cache import dataplane as dp

from .agents import AgentBusy, AgentClient, AgentError, Item
from .cache import CacheState, Entry, Phase
from .config import Config
from .metrics import Metrics
from .p4rt import Switch, SwitchError
from .policy import Admit, Evict, PromotionPolicy
from .updates import Endpoint, Updates

log = logging.getLogger("p4cache.controller.promote")

SET_SLOT = "CacheIngress.lookup.set_slot"
VERSION_MAX = (1 << 32) - 1
COOLDOWN_EPOCHS = 5  # a key whose promotion cannot succeed (too big, short TTL) waits this long
# An absent key waits one epoch only: under cache-aside (ETC's 24 % deletes) a deleted key is
# usually written back within moments, and a key that stays absent costs at most one fetch per
# epoch (the switch reports a key at the admission threshold once per epoch).
NOT_FOUND_COOLDOWN_EPOCHS = 1
PENDING_EPOCHS = 2   # a candidate that could not go in at once is tried again for this long
FRESH_S = 1.0        # a rejected candidate's report is good for this long (see drain)
DRAIN_MISSES = 32    # rejections after which a drain stops
PROBE_S = 0.1        # counters are read between epochs at most this often (see _probe)
FETCH_BATCH = 64     # keys in one fetch request to an agent (at most agent_protocol's limit)

AgentTask = Callable[[AgentClient], Any]
AgentCall = Callable[[str, AgentTask, Callable[[Any], None]], None]


@dataclass
class Pending:
    """A candidate reported but not promoted yet."""

    first: float            # its first report (promotion latency counts from here)
    last: float             # its latest report
    deferred: bool = False  # held back by max_inflight (else: no colder key to evict)


class ProtocolError(Exception):
    """The switch answered a control datagram in a way the protocol does not allow."""


def lookup_match(server: str, key: bytes) -> dict[str, str]:
    srv, klen, kval = dp.lookup_key(server, key)
    return {"server_addr": server, "key_len": str(klen), "key": str(kval)}


class Workflows:
    def __init__(self, cfg: Config, switch: Switch, updates: Updates, cache: CacheState,
                 policy: PromotionPolicy, metrics: Metrics, agent_call: AgentCall,
                 clock: Callable[[], float] = time.monotonic,
                 trace: deque[tuple[Any, ...]] | None = None) -> None:
        self.cfg = cfg
        self.switch = switch
        self.updates = updates
        self.cache = cache
        self.policy = policy
        self.metrics = metrics
        self.agent_call = agent_call
        self.clock = clock
        self.endpoints = {s.ip: Endpoint(s.ip, s.mac) for s in cfg.servers}
        self.cooldown: dict[tuple[str, bytes], float] = {}
        self._reserving: list[tuple[Entry, int]] = []    # rounds started, not reserved yet
        self._deleting: list[Entry] = []                 # evicted for a candidate: to delete
        # filled keys reported since (a write may have taken their value): (entry, filled_at)
        self._refill_checks: list[tuple[Entry, float | None]] = []
        self._fetch_wait: dict[str, list[tuple[Entry, int]]] = {}  # server -> to fetch
        self._fetching: set[str] = set()                # servers with a fetch at the agent
        # Candidates reported but not promoted yet (max_inflight reached, or no colder measured
        # key to evict): (server, key) -> when first reported. Tried again by drain().
        self.pending: dict[tuple[str, bytes], Pending] = {}
        self.last_probe = float("-inf")
        # The protocol steps taken, in order (for status/debugging and the tests).
        self.trace: deque[tuple[Any, ...]] = deque(maxlen=4096) if trace is None else trace

    # ------------------------------------------------------------------ slot versions
    def _known_version(self, e: Entry) -> int:
        v = self.cache.versions.get(e.slot)
        if v is None:
            v = self.updates.read(self.endpoints[e.server], e.slot).version
            self.cache.versions[e.slot] = v
        return v

    def _next_version(self, e: Entry) -> int:
        v = self._known_version(e) + 1
        if v > VERSION_MAX:
            raise ProtocolError(f"slot {e.slot}: 32-bit versions used up")
        return v

    def invalidate_slot(self, e: Entry) -> None:
        """OP_UPDATE(slot, newer version, length 0): the slot invalid and not written."""
        ep = self.endpoints[e.server]
        for _ in range(4):
            v = self._next_version(e)
            ack = self.updates.update(ep, e.slot, v, b"")
            self.cache.versions[e.slot] = v
            if ack.status == dp.STATUS_APPLIED:
                self.trace.append(("invalidate", e.slot, v))
                return
            if ack.status != dp.STATUS_STALE:
                raise ProtocolError(f"invalidating slot {e.slot}: {ack.status_name}")
            # The slot has v or newer: either a retransmission's first copy was applied (ack
            # lost) or our idea of the version is behind. OP_READ settles it.
            self.metrics.stale_resyncs += 1
            r = self.updates.read(ep, e.slot)
            if r.version == v and r.status == dp.STATUS_INVALID:
                self.trace.append(("invalidate", e.slot, v))
                return
            self.cache.versions[e.slot] = max(v, r.version)
        raise ProtocolError(f"slot {e.slot}: invalidation stays stale")

    def _fill_outcome(self, e: Entry, v: int, reply: bytes, ack: dp.Ctrl) -> str:
        """What the ack of the fill of ``e``'s slot at version ``v`` means: "applied",
        "written" (refused: start again) or "retry"."""
        ep = self.endpoints[e.server]
        self.cache.versions[e.slot] = v
        self.trace.append(("fill", e.slot, v, ack.status_name))
        if ack.status == dp.STATUS_APPLIED:
            return "applied"
        if ack.status == dp.STATUS_WRITTEN:
            return "written"
        if ack.status == dp.STATUS_STALE:
            self.metrics.stale_resyncs += 1
            r = self.updates.read(ep, e.slot)
            self.cache.versions[e.slot] = max(v, r.version)
            if r.version == v and r.length == len(reply):
                # Our first copy was applied; if the slot is invalid now a write followed it.
                return "applied" if r.status == dp.STATUS_VALID else "written"
            return "retry"
        raise ProtocolError(f"filling slot {e.slot}: {ack.status_name}")

    # ------------------------------------------------------------------ digests
    def on_digest(self, server: str, key: bytes, count: int = 0) -> None:
        """A digest: ``key`` of ``server`` missed ``count`` times in the switch's current
        epoch (0: unknown, taken as the admission threshold)."""
        now = self.clock()
        self.metrics.digests += 1
        ident = (server, key)
        if server not in self.endpoints:
            log.warning("digest for %s, which is not a configured server", server)
            return
        e = self.cache.get(server, key)
        if e is not None:
            # A cached key that misses: a write, an invalidation or a flush took its slot's
            # value away. The switch asks at the first such miss (once per fill), so the slot
            # is refilled with what memcached holds now, milliseconds after the write. The
            # digest may also be a hot-key report from before the fill (sent once per
            # data-plane epoch, it may trail the fill): a slot that answers is left alone, so
            # a refresh never takes a valid value away for nothing.
            # The slot's state is read at the next flush, with the other such digests' slots.
            if e.phase is Phase.FILLED:
                self._refill_checks.append((e, e.filled_at))
            # A later report of a key being promoted, or filled and not measured yet, tells
            # how hot it is better than the report it was promoted on.
            if count and e.slot in self.policy.frequency:
                self.policy.reported_cached(e.slot, count)
            elif count:
                e.score = max(e.score, count / self.policy.epoch_s)
            return
        score = self.policy.candidate(ident, count)
        if self.cooldown.get(ident, 0.0) > now:
            return
        p = self.pending.get(ident)
        started = now if p is None else p.first
        outcome = self._consider(ident, score, started)
        probed = outcome == "rejected" and self._probe(now)
        if probed:
            outcome = self._consider(ident, score, started)
        if outcome == "rejected":
            self.metrics.rejected += 1
        elif outcome == "deferred":
            self.metrics.deferred += 1
        if outcome != "promoted":
            # Kept, not dropped: the data plane reports a key at T once per epoch, so a
            # report dropped here would cost the key a whole epoch. It is tried again when a
            # promotion finishes (a place under max_inflight) and after every epoch (rates
            # measured, old keys cooled down).
            if p is None:
                p = self.pending[ident] = Pending(now, now)
            p.last = now
            p.deferred = outcome == "deferred"
        if probed:
            self.drain(now)  # the other candidates waiting for the keys that went cold

    def _probe(self, now: float) -> bool:
        """A candidate found no colder key: read the measured slots' counters (at most every
        ``PROBE_S``) in case cached keys went cold since the last epoch (the hot set moved),
        rather than letting the new hot keys wait for the epoch. True if some did."""
        if now - self.last_probe < PROBE_S:
            return False
        self.last_probe = now
        slots = sorted(self.policy.frequency.measured())
        if not slots:
            return False
        cold = self.policy.probe(
            self.switch.read_counter_cells(dp.COUNTER_SLOT_HITS, slots), self.clock())
        self.metrics.probes += 1
        if cold:
            self.metrics.probed_cold += len(cold)
            log.debug("probe: %d cached keys went cold", len(cold))
        return bool(cold)

    def _inflight(self) -> int:
        return len(self.cache.busy)  # promotions (and the odd eviction) under way

    def _consider(self, ident: tuple[str, bytes], score: float, started: float,
                  reported: float | None = None) -> str:
        """Promote ``ident`` now if the policy lets it: "promoted", "deferred" (max_inflight
        promotions under way), "rejected" (no colder measured key to evict) or "blocked"
        (nothing evictable at all: every slot busy or not yet measured)."""
        server, key = ident
        inflight = self._inflight()
        if inflight >= self.cfg.cache.max_inflight:
            log.debug("deferred %r (%.2f/s): %d promotions in flight", key, score, inflight)
            return "deferred"
        busy = self.cache.busy
        d = self.policy.decide(score, busy, reported)
        if isinstance(d, Admit):
            slot = d.slot
        elif isinstance(d, Evict):
            victim = self.cache.by_slot[d.victim]
            log.info("evicting %s %r (%.2f/s) for %r (%.2f/s)", victim.server, victim.key,
                     d.victim_rate, key, score)
            self._evict_for_candidate(victim)
            slot = d.victim
        else:
            log.debug("rejected %r (%.2f/s): %s", key, score, d.reason)
            return "rejected" if d.full else "blocked"
        log.debug("promoting %r (%.2f/s) into slot %d", key, score, slot)
        self.pending.pop(ident, None)
        e = Entry(server, key, slot, score=score, started=started)
        self.cache.add(e)
        self.policy.hotness.forget(ident)
        self.metrics.promotions_started += 1
        self._round(e)
        return "promoted"

    def drain(self, now: float | None = None) -> int:
        """Try the pending candidates again, hottest first (ties: the earliest report, which in
        one data-plane epoch is the hotter key). Stops when max_inflight is reached, nothing is
        evictable, or after ``DRAIN_MISSES`` rejections. Returns how many were promoted.
        Dropped first:
        - candidates deferred at max_inflight and first reported more than
          ``PENDING_EPOCHS`` epochs ago;
        - candidates rejected (no colder key) whose last report is more than ``FRESH_S`` old:
          their evidence predates what the cached keys were last measured at. When the hot set
          moves, or all traffic stops, the cached keys go cold, and yesterday's candidates are
          no better than they are;
        - candidates not reported in this controller epoch or the last, cached since, or in a
          cooldown.
        A key still hot reports again in the next data-plane epoch."""
        if not self.pending:
            return 0
        now = self.clock() if now is None else now
        horizon = now - PENDING_EPOCHS * self.cfg.cache.epoch_s
        for ident, p in list(self.pending.items()):
            if ((p.first < horizon if p.deferred else p.last < now - FRESH_S)
                    or ident in self.cache.entries
                    or not self.policy.hotness.recent(ident)
                    or self.cooldown.get(ident, 0.0) > now):
                del self.pending[ident]
        order = sorted(self.pending.items(),
                       key=lambda it: (-self.policy.hotness.score(it[0]), it[1].first))
        done = misses = 0
        for ident, p in order:
            if ident not in self.pending:
                continue  # promoted meanwhile (a nested drain)
            outcome = self._consider(ident, self.policy.hotness.score(ident), p.first, p.last)
            if outcome == "promoted":
                done += 1
                continue
            p.deferred = outcome == "deferred"
            misses += 1
            # Deferred or blocked: so is every later one. Rejected: a later candidate, reported
            # more recently, may still have a victim (see PromotionPolicy.decide), up to a bound.
            if outcome != "rejected" or misses >= DRAIN_MISSES:
                break
        return done

    def refresh(self, e: Entry, now: float | None = None) -> None:
        """Reserve, fetch and fill again a key that has its slot (a refill)."""
        e.started = self.clock() if now is None else now
        e.attempts = 0
        self.cache.set_deadline(e, None)
        self._round(e)

    # ------------------------------------------------------------------ rounds, in batches
    # A round's steps keep their order for each key (reserve, then the lookup entry, then the
    # fetch, then the fill), but the rounds started between two flushes take each step
    # together: the reserves as one window of control datagrams, the fetches of one agent as
    # one request behind one fence, the fills as one window. A promotion then costs a share
    # of a round trip rather than four (docs/controller.md, "Batches").
    def _round(self, e: Entry) -> None:
        """Start a round for ``e``; its steps run at the next :meth:`flush`."""
        e.attempts += 1
        self.cache.set_phase(e, Phase.RESERVED)
        self._reserving.append((e, e.attempts))

    def _live(self, e: Entry, attempt: int, phase: Phase) -> bool:
        return self.cache.current(e) and e.phase is phase and e.attempts == attempt

    def queued(self) -> int:
        """Rounds, deletes and slot checks waiting for :meth:`flush`."""
        return len(self._reserving) + len(self._refill_checks) + len(self._deleting)

    def _check_refills(self) -> None:
        """Digests for filled keys since the last flush: OP_READ their slots as one window and
        refill those that stopped answering (a slot that answers is left alone)."""
        checks, self._refill_checks = self._refill_checks, []
        live = {e.slot: e for e, filled_at in checks if self.cache.current(e)
                and e.phase is Phase.FILLED and e.filled_at == filled_at}
        if not live:
            return
        entries = list(live.values())
        acks = self.updates.request_many(
            [(self.endpoints[e.server], dp.read_datagram(e.slot)) for e in entries])
        now = self.clock()
        for e, ack in zip(entries, acks, strict=True):
            if ack.status != dp.STATUS_VALID and self.cache.current(e) \
                    and e.phase is Phase.FILLED:
                self.metrics.refill_asks += 1
                self.refresh(e, now)

    def flush(self) -> None:
        """Check the slots of filled keys that were reported, reserve and install the rounds
        started since the last flush, then hand their fetches to the agents (the worker calls
        this whenever its event queue runs dry)."""
        if self._refill_checks:
            self._check_refills()
        while self._reserving or self._deleting:
            if self._deleting:
                self._flush_deletes()       # before any reserve: a slot given up is reused
            batch, self._reserving = self._reserving, []
            live = [(e, a) for e, a in batch if self._live(e, a, Phase.RESERVED)]
            if not live:
                continue
            t0 = self.clock()
            self._reserve_many([e for e, _ in live])         # 1. reserve: slots invalid first,
            t1 = self.clock()
            new = [e for e, _ in live if not e.installed]     #    then the lookup entries
            self.switch.insert_many([
                self.switch.entry(dp.TABLE_LOOKUP, lookup_match(e.server, e.key), SET_SLOT,
                                  {"slot": str(e.slot)}) for e in new])
            t2 = self.clock()
            for e in new:
                e.installed = True
                self.trace.append(("insert", e.server, e.key, e.slot))
                self.metrics.insert_latency.add(t2 - t1)
            for e, a in live:
                self.metrics.reserve_latency.add(t1 - t0)
                self.cache.set_phase(e, Phase.FETCHING)       # 2. fetch (agent, async)
                e.fetch_sent = self.clock()
                self.trace.append(("fetch", e.server, e.key))
                self._fetch_wait.setdefault(e.server, []).append((e, a))
        for server in list(self._fetch_wait):
            if server not in self._fetching:
                self._send_fetches(server)

    def _reserve_many(self, entries: list[Entry]) -> None:
        """OP_UPDATE(slot, newer version, length 0) for every entry, as one window; a `stale`
        ack is settled one by one, as :meth:`invalidate_slot` does."""
        unknown = [e for e in entries if e.slot not in self.cache.versions]
        if unknown:
            acks = self.updates.request_many(
                [(self.endpoints[e.server], dp.read_datagram(e.slot)) for e in unknown])
            for e, ack in zip(unknown, acks, strict=True):
                self.cache.versions[e.slot] = ack.version
        versions = [self._next_version(e) for e in entries]
        acks = self.updates.request_many(
            [(self.endpoints[e.server], dp.update_datagram(e.slot, v, b""))
             for e, v in zip(entries, versions, strict=True)])
        for e, v, ack in zip(entries, versions, acks, strict=True):
            self.cache.versions[e.slot] = v
            if ack.status == dp.STATUS_APPLIED:
                self.trace.append(("invalidate", e.slot, v))
            elif ack.status == dp.STATUS_STALE:
                self.metrics.stale_resyncs += 1
                r = self.updates.read(self.endpoints[e.server], e.slot)
                if r.version == v and r.status == dp.STATUS_INVALID:
                    self.trace.append(("invalidate", e.slot, v))
                else:
                    self.cache.versions[e.slot] = max(v, r.version)
                    self.invalidate_slot(e)
            else:
                raise ProtocolError(f"invalidating slot {e.slot}: {ack.status_name}")

    def _send_fetches(self, server: str) -> None:
        """One request to ``server``'s agent for the keys waiting (up to FETCH_BATCH); the
        next batch goes when it is answered."""
        waiting = [(e, a) for e, a in self._fetch_wait.pop(server, [])
                   if self._live(e, a, Phase.FETCHING)]
        batch, rest = waiting[:FETCH_BATCH], waiting[FETCH_BATCH:]
        if rest:
            self._fetch_wait[server] = rest
        if not batch:
            return
        self._fetching.add(server)
        keys = [e.key for e, _ in batch]

        def done(res: list[Item | None | BaseException] | BaseException) -> None:
            results = [res] * len(batch) if isinstance(res, BaseException) else res
            try:
                self.on_fetched_many(batch, results)
            finally:
                self._fetching.discard(server)
            if self._fetch_wait.get(server):
                self._send_fetches(server)
        self.agent_call(server, lambda agent: agent.fetch_many(keys), done)

    def on_fetched_many(self, batch: list[tuple[Entry, int]],
                        results: list[Item | None | BaseException]) -> None:
        """The agent's answers for ``batch``: the items become fills, sent as one window."""
        fills: list[tuple[Entry, int, bytes, Item]] = []
        for (e, attempt), res in zip(batch, results, strict=True):
            reply = self._fill_reply(e, attempt, res)
            if reply is not None:
                assert isinstance(res, Item)
                fills.append((e, attempt, reply, res))
        if not fills:
            return
        t0 = self.clock()
        outcomes = self._fill_many([(e, reply) for e, _, reply, _ in fills])  # 3. fill
        dt = self.clock() - t0
        for (e, _attempt, reply, item), outcome in zip(fills, outcomes, strict=True):
            self.metrics.fill_latency.add(dt)
            self._filled(e, outcome, reply, item)
        self.drain()

    def _fill_reply(self, e: Entry, attempt: int, res: Item | None | BaseException
                    ) -> bytes | None:
        """The bytes to fill ``e``'s slot with, or None (the round is over: given up, or it
        was evicted, flushed or restarted meanwhile)."""
        if not self._live(e, attempt, Phase.FETCHING):
            return None
        self.metrics.fetch_latency.add(self.clock() - e.fetch_sent)
        if isinstance(res, AgentBusy):
            self.give_up(e, "busy")
            return None
        if isinstance(res, AgentError | OSError):
            log.warning("fetch %r from %s: %s", e.key, e.server, res)
            self.give_up(e, "agent")
            return None
        if isinstance(res, BaseException):
            raise res
        if res is None:
            self.give_up(e, "not-found", cooldown=True, epochs=NOT_FOUND_COOLDOWN_EPOCHS)
            return None
        margin = self.cfg.cache.ttl_margin_s
        if res.ttl != -1 and res.ttl <= margin:
            self.give_up(e, "short-ttl", cooldown=True)
            return None
        try:
            reply = dp.render_value_reply(e.key, res.flags, res.value)
        except ValueError:
            self.give_up(e, "bad-item", cooldown=True)
            return None
        if len(reply) > dp.REPLY_MAX:
            self.give_up(e, "too-big", cooldown=True)
            return None
        return reply

    def _fill_many(self, fills: list[tuple[Entry, bytes]]) -> list[str]:
        """OP_UPDATE with each reply, as one window: "applied", "written" (refused: start
        again) or "retry" for each."""
        versions = [self._next_version(e) for e, _ in fills]
        acks = self.updates.request_many(
            [(self.endpoints[e.server], dp.update_datagram(e.slot, v, reply))
             for (e, reply), v in zip(fills, versions, strict=True)])
        return [self._fill_outcome(e, v, reply, ack)
                for (e, reply), v, ack in zip(fills, versions, acks, strict=True)]

    def _filled(self, e: Entry, outcome: str, reply: bytes, res: Item) -> None:
        if outcome == "applied":
            now = self.clock()
            refill = e.filled_at is not None
            self.cache.set_phase(e, Phase.FILLED)
            e.filled_at = now
            e.reply_len = len(reply)
            e.ttl = res.ttl
            margin = self.cfg.cache.ttl_margin_s
            self.cache.set_deadline(e, None if res.ttl == -1 else
                                    e.fetch_sent + res.ttl - margin)
            self.metrics.promotions += 1
            self.metrics.refills += refill
            self.metrics.promotion_latency.add(now - e.started)
            if e.slot not in self.policy.frequency:
                self.policy.filled(e.slot, None, e.score)
            return
        self.metrics.written_retries += outcome == "written"
        if e.attempts >= self.cfg.cache.fill_attempts:
            self.give_up(e, "written")
            return
        self._round(e)

    # ------------------------------------------------------------------ removal
    def give_up(self, e: Entry, reason: str, cooldown: bool = False,
                epochs: float = COOLDOWN_EPOCHS) -> None:
        self.metrics.abort(reason)
        if cooldown:
            self.cooldown[e.ident] = self.clock() + epochs * self.cfg.cache.epoch_s
        log.info("promotion of %s %r given up: %s", e.server, e.key, reason)
        self._remove(e, keep_slot=False)
        self.drain()

    def _evict_for_candidate(self, e: Entry) -> None:
        """Evict the cold key ``e`` to give its slot to a candidate at once. Its entry's delete
        and its unwatch wait for the next flush, which runs them before it reserves anything:
        delete (no GET of ``e``'s key reaches the slot), unwatch, then the candidate's reserve
        (the slot invalid: it stands for the eviction's own invalidation), insert, fetch and
        fill. Until that flush ``e``'s slot serves ``e``'s key as before, and its writes are
        still gated."""
        self.policy.evicted(e.ident, e.slot)
        self.cache.set_phase(e, Phase.EVICTING)
        self.cache.remove(e)
        self.policy.frequency.stop(e.slot)
        self._deleting.append(e)
        self.metrics.evicted("cold")

    def _flush_deletes(self) -> None:
        """The entries of the keys evicted for candidates, deleted in one write, then their
        keys unwatched."""
        gone, self._deleting = self._deleting, []
        t0 = self.clock()
        try:
            self.switch.delete_many([
                self.switch.entry(dp.TABLE_LOOKUP, lookup_match(e.server, e.key))
                for e in gone if e.installed])
        except BaseException:
            self._deleting = gone + self._deleting   # no reserve may reuse their slots yet
            raise
        for e in gone:
            if e.installed:
                e.installed = False
                self.trace.append(("delete", e.server, e.key, e.slot))
            key = e.key
            self.trace.append(("unwatch", e.server, key))
            self.agent_call(e.server, lambda agent, key=key: agent.unwatch(key),
                            lambda res: None)
            self.metrics.eviction_latency.add(self.clock() - t0)

    def evict(self, e: Entry, reason: str, keep_slot: bool = False) -> None:
        t0 = self.clock()
        self.policy.evicted(e.ident, e.slot)
        self._remove(e, keep_slot)
        self.metrics.evicted(reason)
        self.metrics.eviction_latency.add(self.clock() - t0)

    def _remove(self, e: Entry, keep_slot: bool) -> None:
        """Delete the entry, then invalidate the slot, then unwatch: once the entry is gone no
        GET reaches the slot, and the slot is invalid before another key may use it."""
        self.cache.set_phase(e, Phase.EVICTING)
        if e.installed:
            te = self.switch.entry(dp.TABLE_LOOKUP, lookup_match(e.server, e.key))
            try:
                self.switch.delete(te)
            except SwitchError as err:
                if err.code != code_pb2.NOT_FOUND:
                    raise
            e.installed = False
            self.trace.append(("delete", e.server, e.key, e.slot))
        self.invalidate_slot(e)
        self.cache.remove(e)
        if keep_slot:
            self.policy.frequency.stop(e.slot)
        else:
            self.policy.freed(e.slot)
        key = e.key
        self.trace.append(("unwatch", e.server, key))
        self.agent_call(e.server, lambda agent: agent.unwatch(key), lambda res: None)

    # ------------------------------------------------------------------ timers
    def expire(self, now: float) -> None:
        """Entries whose item expires within the margin leave the switch."""
        for e in self.cache.due(now):
            self.evict(e, "ttl")

    def drop_invalid(self, reason: str) -> int:
        """OP_READ every filled slot; entries whose slot no longer answers (a flush moved the
        generation on, or a write invalidated it) are removed. Returns how many."""
        filled = self.cache.in_phase(Phase.FILLED)
        if not filled:
            return 0
        acks = self.updates.request_many(
            [(self.endpoints[e.server], dp.read_datagram(e.slot)) for e in filled])
        gone = 0
        for e, ack in zip(filled, acks, strict=True):
            self.cache.versions[e.slot] = max(self.cache.versions.get(e.slot, 0), ack.version)
            if ack.status == dp.STATUS_INVALID and self.cache.current(e):
                self.evict(e, reason)
                gone += 1
        return gone

    def forget_cooldowns(self, now: float) -> None:
        self.cooldown = {k: t for k, t in self.cooldown.items() if t > now}
