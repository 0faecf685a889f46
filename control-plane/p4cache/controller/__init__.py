"""p4cache controller: P4Runtime, promotion and eviction policy, TTL, recovery, status.

Where things are:
- ``policy/``     what to cache: hit rates from slot counters, hotness from digests, slots, the
                  "evict the coldest only for a hotter candidate" rule (pure, no I/O);
- ``p4rt.py``     the switch over P4Runtime, through p4runtime-shell (pipeline by cookie,
                  entries by name, counters, digests, packet-out/in);
- ``updates.py``  control datagrams as packet-outs, acks from packet-ins, retransmissions;
- ``agents.py``   the host agents' control channel (fetch / unwatch / sync / status);
- ``cache.py``    the state: (server, key) -> slot, phases, slot versions, TTL deadlines;
- ``promote.py``  the reserve / fetch / fill promotion, eviction, TTL and flush workflows;
- ``recovery.py`` what every (re)connect does: static entries, the cache read back, agents synced;
- ``worker.py``   the one thread that owns the state, and its event queue;
- ``status.py``   the JSON status server and the ``status`` table;
- ``config.py``   the JSON config, checked; ``pipeline.py`` the program files;
- ``cli.py``      ``p4cache-controller run --config F`` / ``p4cache-controller status``.
"""
