"""``p4cache-agent``: the host agent beside one memcached (spec "Deployment in a host")."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from p4cache.agent_protocol import DEFAULT_PORT as CONTROL_PORT
from p4cache.dataplane import CACHE_CTRL_PORT
from p4cache_agent.agent import Agent, Config
from p4cache_agent.loop import DEFAULT_BUSY_POLL, loop_factory


def addr(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="p4cache-agent", description=(
        "TCP write gate in front of memcached: writes to keys the switch may serve are "
        "invalidated at the switch, and confirmed, before memcached sees them."))
    p.add_argument("--listen", type=addr, default=("127.0.0.1", 11211),
                   help="clients' address (default 127.0.0.1:11211)")
    p.add_argument("--memcached", type=addr, default=("127.0.0.1", 11212),
                   help="memcached's TCP backend (default 127.0.0.1:11212)")
    p.add_argument("--switch", type=addr, required=True,
                   help=f"where control datagrams go (any address routed through the switch; "
                        f"port {CACHE_CTRL_PORT})")
    p.add_argument("--source", default=None,
                   help="source address of control datagrams (default: the --listen host "
                        "unless it is a wildcard)")
    p.add_argument("--control", type=addr, default=("127.0.0.1", CONTROL_PORT),
                   help=f"controller's channel (default 127.0.0.1:{CONTROL_PORT})")
    p.add_argument("--memcached-udp-port", type=int, default=11211,
                   help="memcached's UDP port (-U) in this namespace: a fetch waits until "
                        "nothing is queued on it (default 11211; 0: no UDP fence)")
    p.add_argument("--no-gate", action="store_true",
                   help="forward everything without invalidating (deliberately broken)")
    p.add_argument("--fence-timeout", type=float, default=2.0,
                   help="seconds a fetch waits for earlier writes before 'busy' (default 2)")
    p.add_argument("--ttl-margin", type=float, default=2.0,
                   help="a fetched item's own invalidation comes this long before its "
                        "expiry (default 2 s)")
    p.add_argument("--retransmit", type=float, default=0.02,
                   help="seconds between copies of a control datagram (default 0.02)")
    p.add_argument("--deadline", type=float, default=1.0,
                   help="seconds before an unconfirmed invalidation refuses the write "
                        "(default 1)")
    p.add_argument("--busy-poll", type=float, default=DEFAULT_BUSY_POLL * 1e6, metavar="US",
                   help="while memcached owes replies, microseconds the event loop polls its "
                        f"sockets before it sleeps (default {DEFAULT_BUSY_POLL * 1e6:.0f}; "
                        "0: never polls)")
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="-v: info and a trace line per command; -vv: debug")
    return p


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    level = logging.WARNING if a.verbose == 0 else logging.INFO if a.verbose == 1 \
        else logging.DEBUG
    logging.basicConfig(level=level, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if a.verbose >= 1:
        logging.getLogger("p4cache_agent.trace").setLevel(logging.DEBUG)
    source = a.source
    if source is None and a.listen[0] not in ("0.0.0.0", "::", ""):
        source = a.listen[0]
    cfg = Config(listen=a.listen, memcached=a.memcached, switch=a.switch, control=a.control,
                 source=source, gate=not a.no_gate, fence_timeout=a.fence_timeout,
                 ttl_margin=a.ttl_margin, retransmit=a.retransmit, deadline=a.deadline,
                 memcached_udp_port=a.memcached_udp_port, busy_poll=max(0.0, a.busy_poll) * 1e-6)
    try:
        with asyncio.Runner(loop_factory=loop_factory(cfg.busy_poll)) as runner:
            runner.run(Agent(cfg).run_forever())
    except OSError as e:
        print(f"p4cache-agent: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
