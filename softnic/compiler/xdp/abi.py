"""What the generated program and the engine agree on, in one place: the test-run metadata,
verdicts and the statistics the program counts (``stats`` map, one u64 each)."""

from __future__ import annotations

import struct

RUN_MAGIC = 0x50344358  # "P4CX"
# struct run_meta: magic, port, now_us, len (in: the frame's real length; frames shorter than
# an Ethernet header cannot be test-run, so they go in padded); verdict, pin_off, len (out)
RUN_META = struct.Struct("<IIQIIII")
ETH_HLEN = 14
VERDICT_DROP, VERDICT_PORT, VERDICT_CPU = 0, 1, 2
NO_PIN = 0xFFFFFFFF

STATS = (
    "STAT_NO_PORT",  # a frame from an interface with no P4 port: passed to the stack
    "STAT_TOO_BIG",  # the parser read past the first PKT_MAX bytes of a longer frame: dropped
    "STAT_MULTICAST",  # mcast_grp set: multicast is not supported by the xdp target: dropped
    "STAT_REWRITE_FAILED",  # the frame could not be resized / rewritten: dropped
    "STAT_ENGINE_ERROR",  # a run-time error (stack index, division by 0, assert): dropped
    "STAT_DIGEST_LOST",  # the digest ring buffer was full
    "STAT_PACKET_IN_LOST",  # the packet-in ring buffer was full
    "STAT_SLOW_PATH",  # a frame with no room to grow in place, sent on by the runtime
)

# map names fixed by the prelude (the generator names tables, registers and counters itself)
STATE_MAP, CONFIG_MAP, STATS_MAP = "p4_state", "config", "stats"
IF_PORTS_MAP, TX_PORTS_MAP = "if_ports", "tx_ports"
DIGEST_RING, PACKET_IN_RING = "digests", "packet_in"
PROGRAM_NAME = "p4_xdp"
CONFIG = struct.Struct("<QII")  # struct run_config: t0_us, host_port, flags
CFG_XDP_TX = 1
PIN_HEADER = struct.Struct("<IIII")  # struct pin_rec: len, pin_off, port, pad (then the frame)
