"""``p4cache-controller run --config F [-v]`` and ``p4cache-controller status [--json]``."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading

from rich.console import Console

from . import status as status_mod
from .config import ConfigError, load
from .pipeline import resolve
from .worker import Controller

DEFAULT_STATUS = "127.0.0.1:11214"


class _QuietShell(logging.Filter):
    """p4runtime-shell logs through the root logger (e.g. CRITICAL when the stream ends, which
    the controller handles by reconnecting): shown only with -v."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "p4runtime_sh" not in record.pathname


def _logging(verbose: int) -> None:
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    if verbose == 0:
        handler.addFilter(_QuietShell())
    logging.basicConfig(level=level, handlers=[handler], force=True)
    logging.getLogger("grpc").setLevel(logging.ERROR)


def _env_verbosity() -> int:
    """``P4CACHE_CONTROLLER_VERBOSE=1|2``: -v / -vv for a controller started by a lab or a
    benchmark, whose command line is not ours to change."""
    try:
        return max(0, int(os.environ.get("P4CACHE_CONTROLLER_VERBOSE", "0")))
    except ValueError:
        return 0


def cmd_run(args: argparse.Namespace) -> int:
    _logging(max(args.verbose, _env_verbosity()))
    try:
        cfg = load(args.config)
        pipeline = resolve(cfg.program)
    except (ConfigError, RuntimeError) as e:
        print(f"p4cache-controller: {e}", file=sys.stderr)
        return 2
    ctl = Controller(cfg, pipeline)
    try:
        server = status_mod.StatusServer(cfg.status_listen, ctl.status)
    except OSError as e:
        print(f"p4cache-controller: status server on {cfg.status_listen}: {e.strerror}",
              file=sys.stderr)
        return 2
    done = threading.Event()

    def stop(signum: int, frame: object) -> None:
        done.set()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    ctl.start()
    server.start()
    logging.getLogger("p4cache.controller").info("status on %s", server.address)
    try:
        done.wait()
    finally:
        server.stop()
        ctl.stop()
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    try:
        st = status_mod.fetch(args.connect)
    except (OSError, ValueError) as e:
        print(f"p4cache-controller: no status from {args.connect}: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(st, indent=2))
    elif "error" in st:
        print(f"p4cache-controller: {st['error']}", file=sys.stderr)
        return 1
    else:
        status_mod.render(st, Console())
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="p4cache-controller",
                                description="p4cache's P4Runtime controller")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the controller")
    r.add_argument("--config", required=True, help="JSON config (see p4cache.controller.config)")
    r.add_argument("-v", "--verbose", action="count", default=0,
                   help="log what happens (-vv: debug)")
    r.set_defaults(fn=cmd_run)
    s = sub.add_parser("status", help="show a running controller's state")
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.add_argument("--connect", default=DEFAULT_STATUS, metavar="HOST:PORT",
                   help=f"its status address (default {DEFAULT_STATUS})")
    s.set_defaults(fn=cmd_status)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
