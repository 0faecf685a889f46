"""The controller's one worker thread: the only owner of the cache state.

Everything that changes the cache arrives as an event on one queue and is handled here in
order: hot-key digests, agent results (fetch, unwatch, sync), the loss of the switch, status
requests, and the timers (epochs: counter polls and policy; TTL deadlines). Other threads only
receive (the P4Runtime stream, the agents' sockets) and put events on the queue.

Agent requests run on one single-threaded executor per agent, so the requests for one agent go
out in the order the worker issued them (an unwatch is never overtaken by the next fetch of the
same key, and a sync goes before the fetches that follow it).
"""

from __future__ import annotations

import cProfile
import ipaddress
import logging
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from p4cache import dataplane as dp

from .agents import AgentClient
from .cache import CacheState, Phase
from .config import Config
from .metrics import Metrics
from .p4rt import DigestMessage, PipelineFiles, Switch, SwitchError, SwitchUnavailable
from .policy import AdmissionThreshold, PromotionPolicy
from .promote import ProtocolError, Workflows
from .recovery import install_static, recover
from .updates import AckTimeout, Updates

log = logging.getLogger("p4cache.controller")

STAT_NAMES = ["hit", "miss", "invalidate", "update", "stale", "report", "untrusted",
              "not_allowed", "flush", "refill"]
RECONNECT_S = 1.0
ADMISSION = "CacheIngress.hot_keys.admission"
SET_ADMISSION = "CacheIngress.hot_keys.set_admission"
ADMIT_S = 0.1          # how often the admission threshold is looked at
FLUSH_AT = 64          # rounds queued that are run without waiting for the queue to drain
DIGEST_BACKLOG = 256   # digest lists queued for the worker at most; beyond, dropped and counted


class Controller:
    def __init__(self, cfg: Config, pipeline: PipelineFiles,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.cfg = cfg
        self.pipeline = pipeline
        self.clock = clock
        self.events: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self._backlog = 0            # digest lists on ``events`` (the stream thread adds)
        self._backlog_lock = threading.Lock()
        self._threshold_pushed: int | None = None  # what the switch's admission table holds
        self.metrics = Metrics()
        self.agents = {s.ip: AgentClient(s.name, s.agent, timeout=cfg.cache.agent_timeout_s)
                       for s in cfg.servers}
        self._executors = {ip: ThreadPoolExecutor(1, thread_name_prefix=f"agent-{a.name}")
                           for ip, a in self.agents.items()}
        self._heartbeat_pending: set[str] = set()
        self._hb_lock = threading.Lock()
        self.session = 0
        self.switch: Switch | None = None
        self.updates: Updates | None = None
        self.cache = CacheState(cfg.cache.slots)
        self.policy = self._new_policy()
        self.flows: Workflows | None = None
        self.pushed_pipeline = False
        self.last_error: str | None = None
        self.stats: dict[int, int] = {}
        self._stats_at: float | None = None   # clock() when ``stats`` was read from the switch
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = self.clock()
        self.trace: deque[tuple[Any, ...]] = deque(maxlen=4096)  # protocol steps, all sessions
        self.ready = threading.Event()  # set after the first successful connect + recovery

    def _new_policy(self) -> PromotionPolicy:
        c = self.cfg.cache
        defines = self.cfg.program.defines
        initial = int(defines.get("HOT_THRESHOLD", dp.HOT_THRESHOLD))
        epoch_s = (1 << int(defines.get("EPOCH_SHIFT", dp.EPOCH_SHIFT))) / 1e6
        admission = AdmissionThreshold(initial, epoch_s, c.hotter_factor, c.threshold_min,
                                       c.threshold_max, budget=c.digest_budget,
                                       backlog_max=DIGEST_BACKLOG)
        return PromotionPolicy(c.slots, c.ema_alpha, initial, epoch_s, c.hotter_factor,
                               admission)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="controller", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.events.put(("stop",))
        if self._thread is not None:
            self._thread.join(timeout=30)
        self._disconnect()
        for ex in self._executors.values():
            ex.shutdown(wait=False, cancel_futures=True)
        for a in self.agents.values():
            a.close()

    def run(self) -> None:
        """The worker loop (returns after stop()). With P4CACHE_CONTROLLER_PROFILE=FILE in the
        environment it runs under cProfile and leaves the statistics in FILE (pstats)."""
        path = os.environ.get("P4CACHE_CONTROLLER_PROFILE")
        if not path:
            self._run()
            return
        prof = cProfile.Profile()
        prof.enable()
        try:
            self._run()
        finally:
            prof.disable()
            prof.dump_stats(path)

    def _run(self) -> None:
        next_tick = self.clock()
        last_tick = next_admit = next_tick
        while not self._stop.is_set():
            if self.switch is None:
                if not self._connect():
                    self._idle(RECONNECT_S)
                    continue
                next_tick = last_tick = next_admit = self.clock()
            deadline = self.cache.next_deadline()
            wake = min(next_tick, next_admit)
            wake = wake if deadline is None else min(wake, deadline)
            try:
                ev = self.events.get(timeout=max(0.0, wake - self.clock()))
            except queue.Empty:
                ev = None
            try:
                if ev is not None:
                    self._handle(ev)
                now = self.clock()
                if self.switch is not None and now >= next_tick:
                    self._tick(now - last_tick)
                    last_tick, next_tick = now, now + self.cfg.cache.epoch_s
                if self.switch is not None and now >= next_admit:
                    next_admit = now + ADMIT_S
                    self._admit(now)
                # Rounds started by the events so far run their steps together once no more
                # events wait (or enough rounds did): a burst of reports becomes one batch.
                if self.flows is not None and (
                        self.events.empty()
                        or self.flows.queued() >= min(FLUSH_AT, self.cfg.cache.max_inflight)):
                    self._flush()
                if self.flows is not None:
                    self.flows.expire(self.clock())
            except (SwitchUnavailable, AckTimeout, ProtocolError) as e:
                self._lost(str(e))
            except SwitchError as e:
                self.last_error = str(e)
                log.error("%s", e)

    def _idle(self, seconds: float) -> None:
        """While disconnected: answer status requests and calls, drop the rest."""
        end = self.clock() + seconds
        while not self._stop.is_set():
            left = end - self.clock()
            if left <= 0:
                return
            try:
                ev = self.events.get(timeout=left)
            except queue.Empty:
                return
            if ev[0] in ("status", "call", "stop"):
                self._handle(ev)
            elif ev[0] == "digest":
                with self._backlog_lock:
                    self._backlog -= 1

    # ------------------------------------------------------------------ the switch
    def _connect(self) -> bool:
        c = self.cfg.switch
        # A short wait per attempt: status requests queue up behind it.
        sw = Switch(c.grpc, self.pipeline, c.device_id, c.election_id, connect_timeout=1.0)
        try:
            self.pushed_pipeline = sw.connect()
        except SwitchError as e:
            self.last_error = str(e)
            log.warning("switch %s: %s (retrying)", c.grpc, e)
            return False
        self.session += 1
        sid = self.session
        self.switch = sw
        self.updates = Updates(lambda frame: sw.packet_out(frame, 0), c.ctrl_ip, c.ctrl_mac,
                               self.cfg.cache.ack_timeout_s, self.cfg.cache.ack_attempts)
        updates = self.updates
        sw.start_stream(on_packet_in=lambda p: updates.on_packet_in(p.payload),
                        on_digest=lambda d: self._queue_digest(sid, d),
                        on_lost=lambda why: self.events.put(("lost", sid, why)))
        self.cache = CacheState(self.cfg.cache.slots)
        self.policy = self._new_policy()
        self._threshold_pushed = None
        self.flows = Workflows(self.cfg, sw, updates, self.cache, self.policy, self.metrics,
                               self._agent_call, self.clock, self.trace)
        try:
            install_static(sw, self.cfg)
            self.stats = self._read_stats()
            rec = recover(self.cfg, sw, updates, self.cache, self.policy, self.flows,
                          self._sync_agent)
        except (SwitchError, AckTimeout, ProtocolError) as e:
            self._lost(f"recovery: {e}")
            return False
        self.metrics.switch_sessions += 1
        self.last_error = None
        log.info("switch %s: session %d, pipeline %s, %d keys recovered", c.grpc, sid,
                 "pushed" if self.pushed_pipeline else "kept", rec.entries)
        self.ready.set()
        return True

    def _lost(self, why: str) -> None:
        log.warning("switch lost: %s; reconnecting", why)
        self.last_error = why
        self._disconnect()

    def _disconnect(self) -> None:
        sw, self.switch = self.switch, None
        self.flows = None
        self.updates = None
        # The state is rebuilt from the switch on the next connect; results of this session's
        # agent requests are dropped (their session id is old).
        self.cache = CacheState(self.cfg.cache.slots)
        if sw is not None:
            sw.close()

    def _read_stats(self) -> dict[int, int]:
        assert self.switch is not None
        at = self.clock()  # before the read: the counts include everything before ``at``
        stats = {i: pk for i, (pk, _) in self.switch.read_counter(dp.COUNTER_STATS).items()}
        self._stats_at = at
        return stats

    # ------------------------------------------------------------------ agents
    def _agent_call(self, server: str, fn: Callable[[AgentClient], Any],
                    done: Callable[[Any], None]) -> None:
        sid = self.session
        agent = self.agents[server]

        def run() -> None:
            try:
                res: Any = fn(agent)
            except Exception as e:
                res = e
            self.events.put(("agent", sid, done, res))
        self._executors[server].submit(run)

    def _sync_agent(self, server: str, keys: set[bytes]) -> None:
        self._agent_call(server, lambda a: a.sync(keys), self._log_agent_error("sync"))

    @staticmethod
    def _log_agent_error(what: str) -> Callable[[Any], None]:
        def done(res: Any) -> None:
            if isinstance(res, Exception):
                log.warning("%s: %s", what, res)
        return done

    def _heartbeat(self) -> None:
        """Keep every agent connected: a restarted agent is synced (from the client's mirror of
        its watch set) as soon as it is back, instead of at the next fetch."""
        for ip, agent in self.agents.items():
            with self._hb_lock:
                if ip in self._heartbeat_pending:
                    continue
                self._heartbeat_pending.add(ip)

            def beat(a: AgentClient = agent, ip: str = ip) -> None:
                try:
                    a.ensure_connected()
                finally:
                    with self._hb_lock:
                        self._heartbeat_pending.discard(ip)
            self._executors[ip].submit(beat)

    # ------------------------------------------------------------------ events
    def _handle(self, ev: tuple[Any, ...]) -> None:
        kind = ev[0]
        if kind == "digest":
            _, sid, msg = ev
            with self._backlog_lock:
                self._backlog -= 1
            if sid == self.session and self.flows is not None:
                self._on_digest(msg)
        elif kind == "agent":
            _, sid, done, res = ev
            if sid == self.session and self.flows is not None:
                try:
                    done(res)
                except SwitchError as e:
                    # a batch of results half handled: as for a failed flush
                    self._lost(f"agent result: {e}")
        elif kind == "lost":
            _, sid, why = ev
            if sid == self.session and self.switch is not None:
                self._lost(why)
        elif kind == "status":
            ev[1].set_result(self.snapshot())
        elif kind == "call":
            _, fut, fn = ev
            try:
                fut.set_result(fn(self))
            except Exception as e:
                fut.set_exception(e)
        elif kind == "stop":
            self._stop.set()

    def _on_digest(self, msg: DigestMessage) -> None:
        assert self.flows is not None
        for d in msg.data:
            try:
                server = str(ipaddress.IPv4Address(d["server_addr"]))
                key = dp.key_from_match(d["key_len"], d["key"])
                count = int(d["count"])
            except (KeyError, ValueError, TypeError) as e:
                log.warning("unreadable digest %s: %s", d, e)
                continue
            self.flows.on_digest(server, key, count)

    def _flush(self) -> None:
        """Run the queued rounds (Workflows.flush). A switch error half way through a batch
        leaves entries between steps, so it ends the session: recovery rebuilds the state from
        what the switch holds, as after any loss."""
        assert self.flows is not None
        try:
            self.flows.flush()
        except SwitchError as e:
            self._lost(f"flush: {e}")

    def _queue_digest(self, sid: int, msg: DigestMessage) -> None:
        """From the stream thread: a digest list for the worker, unless DIGEST_BACKLOG of them
        wait already. A list dropped here is counted; the admission threshold goes up as the
        backlog passes half of the bound, so drops are the last resort, not the rule."""
        with self._backlog_lock:
            if self._backlog >= DIGEST_BACKLOG:
                self.metrics.digests_dropped += len(msg.data)
                return
            self._backlog += 1
        self.events.put(("digest", sid, msg))

    def _admit(self, now: float) -> None:
        """Move the data plane's report threshold if the policy says so (policy/admission.py),
        and make sure the switch holds it (a new session starts from the program's default)."""
        assert self.switch is not None
        busy = self.cache.busy
        change = self.policy.admit(now, busy, self._backlog)
        value = self.policy.admission.value
        if value == self._threshold_pushed:
            return
        self.switch.install(self.switch.entry(ADMISSION, {}, SET_ADMISSION,
                                              {"threshold": str(value)}, default=True))
        self._threshold_pushed = value
        if change is not None:
            self.metrics.threshold_changes += 1
            log.info("admission threshold %d -> %d (%s)", change.old, change.new, change.why)

    def _tick(self, dt: float) -> None:
        """One epoch: counters, flush detection, the policy's estimates, agent heartbeats."""
        assert self.switch is not None and self.flows is not None
        stats = self._read_stats()
        flushes = stats.get(dp.STAT_FLUSH, 0) - self.stats.get(dp.STAT_FLUSH, 0)
        self.stats = stats
        if flushes != 0:
            # The generation moved on: filled slots stopped answering. Forget those entries;
            # the keys come back through digests if they are still hot.
            self.metrics.flushes_seen += 1
            n = self.flows.drop_invalid("flush")
            log.info("flush seen (%d): %d entries dropped", flushes, n)
        tracked = sorted(self.policy.frequency.rates())
        counts = self.switch.read_counter_cells(dp.COUNTER_SLOT_HITS, tracked)
        now = self.clock()
        self.policy.end_epoch(counts, dt, now)
        self.flows.last_probe = now
        self.flows.drain()
        if log.isEnabledFor(logging.DEBUG):
            log.debug("epoch %.3f s: slot rates %s", dt, " ".join(
                f"{s}:{self.cache.by_slot[s].key[:6]!r}={r:.1f}"
                for s, r in sorted(self.policy.frequency.rates().items())
                if s in self.cache.by_slot))
        self.flows.forget_cooldowns(self.clock())
        self._heartbeat()

    # ------------------------------------------------------------------ other threads
    def _ask(self, ev: tuple[Any, ...], fut: Future[Any], timeout: float) -> Any:
        self.events.put(ev)
        return fut.result(timeout=timeout)

    def status(self, timeout: float = 5.0) -> dict[str, Any]:
        """A fresh snapshot, made by the worker thread."""
        fut: Future[dict[str, Any]] = Future()
        return self._ask(("status", fut), fut, timeout)

    def call(self, fn: Callable[[Controller], Any], timeout: float = 30.0) -> Any:
        """Run ``fn(controller)`` on the worker thread and return its result."""
        fut: Future[Any] = Future()
        return self._ask(("call", fut, fn), fut, timeout)

    def inject_digest(self, server: str, key: bytes, count: int | None = None) -> None:
        """Handle (server, key) as if the switch had reported it hot after ``count`` misses
        in the current epoch (None: the admission threshold's)."""
        srv, klen, kval = dp.lookup_key(server, key)
        n = self.policy.admission.value if count is None else count
        msg = DigestMessage(dp.DIGEST_HOT_KEY, 0,
                            [{"server_addr": srv, "key_len": klen, "key": kval, "count": n}])
        self._queue_digest(self.session, msg)

    # ------------------------------------------------------------------ status
    def snapshot(self) -> dict[str, Any]:
        m = self.metrics
        stats = {name: self.stats.get(i, 0) for i, name in enumerate(STAT_NAMES)}
        looked = stats["hit"] + stats["miss"]
        now = self.clock()
        keys = []
        for e in sorted(self.cache.entries.values(), key=lambda x: x.slot):
            keys.append({
                "server": e.server, "key": e.key.decode("latin-1"), "slot": e.slot,
                "phase": e.phase.value, "version": self.cache.versions.get(e.slot),
                "hits_per_s": round(self.policy.frequency.rate(e.slot), 3),
                "measured": self.policy.frequency.is_measured(e.slot),
                "ttl": e.ttl, "reply_bytes": e.reply_len,
                "expires_in_s": None if e.deadline is None else round(e.deadline - now, 3),
            })
        up = self.updates
        return {
            "uptime_s": round(now - self._started, 3),
            "switch": {"grpc": self.cfg.switch.grpc, "connected": self.switch is not None,
                       "sessions": m.switch_sessions, "pipeline_pushed": self.pushed_pipeline,
                       "last_error": self.last_error},
            "cache": {"slots": self.cfg.cache.slots, "cached": len(keys),
                      "filled": len(self.cache.in_phase(Phase.FILLED)),
                      "in_progress": len(self.cache.in_phase(Phase.RESERVED, Phase.FETCHING))},
            "switch_counters": stats,
            # uptime when switch_counters was read (once an epoch): a reader that needs counts
            # from after some moment waits for this to pass that moment's uptime_s
            "switch_counters_read_s": (None if self._stats_at is None
                                       else round(self._stats_at - self._started, 3)),
            "hit_ratio": None if looked == 0 else round(stats["hit"] / looked, 4),
            "promotions": m.promotions, "refills": m.refills, "refill_asks": m.refill_asks,
            "promotions_started": m.promotions_started, "aborted": dict(m.aborted),
            "evictions": sum(m.evictions.values()), "evictions_by_reason": dict(m.evictions),
            "invalidations": stats["invalidate"], "flushes": stats["flush"],
            "flushes_seen": m.flushes_seen, "rejected": m.rejected, "deferred": m.deferred,
            "pending": 0 if self.flows is None else len(self.flows.pending),
            "probes": m.probes, "probed_cold": m.probed_cold,
            "digests": m.digests,
            "admission": {"threshold": self.policy.admission.value,
                          "changes": m.threshold_changes,
                          "overloads": self.policy.admission.overloads,
                          "digests_dropped": m.digests_dropped,
                          "digest_backlog": self._backlog},
            "written_retries": m.written_retries, "stale_resyncs": m.stale_resyncs,
            "latency": {"promotion": m.promotion_latency.summary(),
                        "eviction": m.eviction_latency.summary(),
                        "reserve": m.reserve_latency.summary(),
                        "insert": m.insert_latency.summary(),
                        "fetch": m.fetch_latency.summary(),
                        "fill": m.fill_latency.summary()},
            "control_datagrams": None if up is None else {
                "requests": up.stats.requests, "retransmissions": up.stats.retransmissions,
                "timeouts": up.stats.timeouts, "acks": dict(up.stats.by_status)},
            "agents": [{"name": a.name, "server": ip, "addr": f"{a.addr[0]}:{a.addr[1]}",
                        "up": a.up, "sessions": a.sessions, "watched": len(a.watched)}
                       for ip, a in self.agents.items()],
            "keys": keys,
        }
