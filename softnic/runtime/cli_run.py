"""``softnic run``: the drop-in for ``simple_switch_grpc``.

Command line (FIDELITY.md)::

    softnic run [PROG.json | --no-p4] -i 1@veth1 -i 2@veth2 ... [--device-id N]
        [--log-console] [--log-level L] [--log-file F] [--pcap-dir DIR] [--thrift-port P]
        [--grpc-server-addr HOST:PORT] [--cpu-port N] [TLS options]
        [-- --grpc-server-addr HOST:PORT --cpu-port N TLS options]

    TLS options: --grpc-server-ssl --grpc-server-cert PATH --grpc-server-key PATH
                 [--grpc-server-cacert PATH] [--grpc-server-with-client-auth]

simple_switch_grpc takes its gRPC options after ``--`` (they belong to the gRPC target, not to
the switch core); we accept them there and before ``--`` alike, so scripts written for either
spelling work. ``--thrift-port`` is accepted and ignored: softnic has no Thrift server.

Two deliberate differences, both for safety: without ``--grpc-server-addr`` the P4Runtime server
listens on 127.0.0.1:9559 (loopback only), where simple_switch_grpc listens on 0.0.0.0:9559 (all
interfaces); and TLS file options given without ``--grpc-server-ssl`` are an error, where
simple_switch_grpc warns and serves plaintext.

The process prints one startup line, forwards until SIGINT/SIGTERM, then stops the P4Runtime
server, closes the ports and exits 0. Errors in the arguments or an interface that does not exist
end it with exit code 2 (usage) or 1 (runtime) before anything is started.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import logging
import re
import signal
import ssl
import sys
import textwrap
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from softnic.runtime.ports import PortError, PortSet, parse_port_spec

log = logging.getLogger("softnic.run")
SWITCH_INTERVAL_S = 0.0005  # see main()

TRACE = 5  # below DEBUG: one line per packet and per pipeline step
logging.addLevelName(TRACE, "TRACE")
LOG_LEVELS = {
    "trace": TRACE,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "off": logging.CRITICAL + 10,
}
# Loopback: a P4Runtime client can rewrite the whole pipeline, so the server is reachable from
# other hosts (or network namespaces) only when an address says so. simple_switch_grpc's default
# is BMV2_DEFAULT_GRPC_ADDR, all interfaces.
DEFAULT_GRPC_ADDR = "127.0.0.1:9559"
ENGINES = ("python", "xdp")
BMV2_DEFAULT_GRPC_ADDR = "0.0.0.0:9559"


class UsageError(Exception):
    pass


class TLSFileError(Exception):
    """A TLS file cannot be read or does not hold what it should; the message says what to do."""


@dataclass
class RunConfig:
    program: Path | None
    ports: dict[int, str]
    device_id: int = 0
    cpu_port: int | None = None
    drop_port: int = 511
    grpc_addr: str = DEFAULT_GRPC_ADDR
    grpc_ssl: bool = False
    grpc_cacert: Path | None = None
    grpc_cert: Path | None = None
    grpc_key: Path | None = None
    grpc_client_auth: bool = False
    log_console: bool = False
    log_level: str = "info"
    log_file: Path | None = None
    pcap_dir: Path | None = None
    thrift_port: int | None = None
    engine: str = "python"
    xdp_mode: str = "native"
    host_port: int | None = None
    notes: list[str] = field(default_factory=list)


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so ``main`` owns the exit code and messages."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's help layout, without splitting option names such as --grpc-server-addr."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(re.sub(r"\s+", " ", text).strip(), width, break_on_hyphens=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return textwrap.fill(re.sub(r"\s+", " ", text).strip(), width, initial_indent=indent,
                             subsequent_indent=indent, break_on_hyphens=False)


def _grpc_options(p: Any) -> None:  # a parser or an argument group
    p.add_argument("--grpc-server-addr", metavar="HOST:PORT",
                   help=f"P4Runtime server address (default {DEFAULT_GRPC_ADDR}, loopback only; "
                        f"simple_switch_grpc's default is {BMV2_DEFAULT_GRPC_ADDR}, all "
                        "interfaces: give that address explicitly to be reachable from other "
                        "hosts or namespaces, preferably with --grpc-server-ssl)")
    p.add_argument("--cpu-port", type=int, metavar="N",
                   help="port whose packets go to / come from the controller (packet-in/out)")
    p.add_argument("--grpc-server-ssl", action="store_true", default=None,
                   help="serve P4Runtime over TLS (needs --grpc-server-cert and "
                        "--grpc-server-key)")
    p.add_argument("--grpc-server-cacert", type=Path, metavar="PATH",
                   help="PEM file with the CA certificate that client certificates are verified "
                        "against (needed by --grpc-server-with-client-auth)")
    p.add_argument("--grpc-server-cert", type=Path, metavar="PATH",
                   help="PEM file with the server certificate (chain)")
    p.add_argument("--grpc-server-key", type=Path, metavar="PATH",
                   help="PEM file with the server's private key (not passphrase-protected)")
    p.add_argument("--grpc-server-with-client-auth", action="store_true", default=None,
                   help="mutual TLS: refuse clients without a certificate signed by "
                        "--grpc-server-cacert")


def _main_parser() -> _Parser:
    p = _Parser(prog="softnic run", add_help=True, formatter_class=_HelpFormatter,
                description="Run a BMv2 JSON program on raw interfaces with a P4Runtime server "
                            "(drop-in for simple_switch_grpc).",
                epilog=f"Unlike simple_switch_grpc, which listens on {BMV2_DEFAULT_GRPC_ADDR} "
                       f"(all interfaces) by default, softnic run listens on {DEFAULT_GRPC_ADDR} "
                       "(loopback only) unless --grpc-server-addr is given. TLS options given "
                       "without --grpc-server-ssl are an error (simple_switch_grpc ignores them "
                       "and serves plaintext).")
    p.add_argument("program", nargs="?", type=Path, help="BMv2 JSON produced by softnic compile "
                   "or p4c-bm2-ss")
    p.add_argument("--no-p4", action="store_true",
                   help="start without a program; the controller pushes one over P4Runtime")
    p.add_argument("-i", "--interface", action="append", default=[], metavar="PORT@IFACE",
                   help="attach switch port PORT to interface IFACE (repeatable)")
    p.add_argument("--device-id", type=int, default=0, metavar="N")
    p.add_argument("--drop-port", type=int, default=511, metavar="N",
                   help="egress port that means drop; mark_to_drop writes it (default: 511, "
                   "as simple_switch)")
    p.add_argument("--log-console", action="store_true", help="log to stderr (per-packet trace)")
    p.add_argument("-L", "--log-level", choices=sorted(LOG_LEVELS), default=None)
    p.add_argument("--log-file", type=Path, metavar="F")
    p.add_argument("--pcap-dir", "--pcap", dest="pcap_dir", type=Path, metavar="DIR",
                   help="write <iface>_in.pcap / <iface>_out.pcap for every port")
    p.add_argument("--thrift-port", type=int, metavar="P", help="accepted and ignored")
    p.add_argument("--engine", choices=ENGINES, default="python",
                   help="python: softnic's in-process engine (default); xdp: the program "
                   "compiled to an XDP program and attached to every port (needs root, clang, "
                   "libbpf and Linux >= 5.18; docs/xdp.md)")
    p.add_argument("--xdp-mode", choices=("native", "skb"), default="native",
                   help="how --engine xdp attaches: native (driver, default) or skb (generic) "
                   "XDP; on a veth the peer needs GRO on to receive (docs/xdp.md)")
    p.add_argument("--host-port", type=int, metavar="N",
                   help="--engine xdp: packets sent to port N go up this host's network stack "
                   "(XDP_PASS), for a program on a server's own interface; N needs no -i")
    _grpc_options(p.add_argument_group(
        "gRPC target options", "simple_switch_grpc takes these after '--'; softnic run accepts "
        "them before or after it"))
    return p


def _target_parser() -> _Parser:
    p = _Parser(prog="softnic run ... --", add_help=False)
    _grpc_options(p)
    return p


def _check_addr(addr: str) -> str:
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise UsageError(f"bad --grpc-server-addr {addr!r}: expected HOST:PORT")
    return addr


def parse_args(argv: list[str]) -> RunConfig:
    """Parse a ``softnic run`` command line; raises :class:`UsageError` with a one-line reason."""
    if "--" in argv:
        cut = argv.index("--")
        core_argv, target_argv = argv[:cut], argv[cut + 1:]
    else:
        core_argv, target_argv = argv, []
    core = _main_parser().parse_args(core_argv)
    target = _target_parser().parse_args(target_argv)

    if core.program is not None and core.no_p4:
        raise UsageError("give either PROG.json or --no-p4, not both")
    if core.program is None and not core.no_p4:
        raise UsageError("expected PROG.json or --no-p4")
    if core.program is not None and not core.program.is_file():
        raise UsageError(f"program {str(core.program)!r} does not exist")

    ports: dict[int, str] = {}
    for spec in core.interface:
        try:
            num, ifname = parse_port_spec(spec)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if num in ports:
            raise UsageError(f"port {num} is given twice ({ports[num]} and {ifname})")
        if ifname in ports.values():
            raise UsageError(f"interface {ifname} is given for two ports")
        ports[num] = ifname

    def merged(name: str) -> Any:
        before, after = getattr(core, name), getattr(target, name)
        if before is not None and after is not None and before != after:
            opt = "--" + name.replace("_", "-")
            raise UsageError(f"{opt} given before and after '--' with different values")
        return after if after is not None else before

    cpu_port = merged("cpu_port")
    if cpu_port is not None and not 0 <= cpu_port < 512:
        raise UsageError("--cpu-port must be in 0..511")
    if cpu_port is not None and cpu_port in ports:
        raise UsageError(f"--cpu-port {cpu_port} is also a data port ({ports[cpu_port]})")
    if not 0 <= core.drop_port < 512:
        raise UsageError("--drop-port must be in 0..511")
    if core.drop_port in ports:
        raise UsageError(f"--drop-port {core.drop_port} is also a data port "
                         f"({ports[core.drop_port]})")
    grpc_addr = _check_addr(merged("grpc_server_addr") or DEFAULT_GRPC_ADDR)
    ssl_on = bool(merged("grpc_server_ssl"))
    client_auth = bool(merged("grpc_server_with_client_auth"))
    cacert, cert, key = (merged(n) for n in ("grpc_server_cacert", "grpc_server_cert",
                                             "grpc_server_key"))
    if not ssl_on:
        given = [opt for opt, v in (("--grpc-server-cacert", cacert), ("--grpc-server-cert", cert),
                                    ("--grpc-server-key", key),
                                    ("--grpc-server-with-client-auth", client_auth)) if v]
        if given:
            raise UsageError(f"{', '.join(given)} given without --grpc-server-ssl: add "
                             "--grpc-server-ssl (softnic does not fall back to plaintext)")
    else:
        if cert is None:
            raise UsageError("--grpc-server-ssl needs --grpc-server-cert PATH (PEM server "
                             "certificate)")
        if key is None:
            raise UsageError("--grpc-server-ssl needs --grpc-server-key PATH (PEM private key)")
        if client_auth and cacert is None:
            raise UsageError("--grpc-server-with-client-auth needs --grpc-server-cacert PATH "
                             "(PEM certificate of the CA that signs client certificates)")

    cfg = RunConfig(
        program=core.program, ports=ports, device_id=core.device_id, cpu_port=cpu_port,
        drop_port=core.drop_port,
        grpc_addr=grpc_addr, grpc_ssl=ssl_on, grpc_cacert=cacert, grpc_cert=cert, grpc_key=key,
        grpc_client_auth=client_auth, log_console=core.log_console,
        log_level=core.log_level or ("trace" if core.log_console else "info"),
        log_file=core.log_file, pcap_dir=core.pcap_dir, thrift_port=core.thrift_port,
        engine=core.engine, xdp_mode=core.xdp_mode, host_port=core.host_port)
    if core.engine != "xdp" and (core.host_port is not None or core.xdp_mode != "native"):
        raise UsageError("--host-port and --xdp-mode need --engine xdp")
    if core.host_port is not None and core.host_port in (cpu_port, core.drop_port):
        raise UsageError(f"--host-port {core.host_port} is the CPU or the drop port; pick a "
                         "port number of its own (it needs no interface)")
    if cfg.thrift_port is not None:
        cfg.notes.append(f"--thrift-port {cfg.thrift_port} ignored (softnic has no Thrift server)")
    if not ssl_on and not _is_loopback(grpc_addr.rpartition(":")[0]):
        cfg.notes.append(f"P4Runtime on {grpc_addr} is plaintext and reachable from other hosts: "
                         "whoever connects controls the switch; add --grpc-server-ssl "
                         "(with --grpc-server-with-client-auth) or listen on 127.0.0.1")
    return cfg


def _is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: whatever it resolves to, assume it is reachable


_PEM_CERT = b"-----BEGIN CERTIFICATE-----"


def _read_pem(opt: str, path: Path, what: str) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TLSFileError(f"cannot read {opt} {path}: {exc.strerror or exc}; give the path of "
                           f"a readable PEM file holding {what}") from None
    if b"-----BEGIN " not in data:
        raise TLSFileError(f"{opt} {path} is not a PEM file (no '-----BEGIN' line); it must "
                           f"hold {what}")
    return data


def _no_passphrase() -> bytes:
    raise TLSFileError("is passphrase-protected")


def load_tls(cfg: RunConfig) -> Any:
    """The :class:`~softnic.runtime.p4rt.ServerTLS` for ``cfg`` (None without --grpc-server-ssl).

    Every file is read and checked here, before anything starts: a missing or unreadable file, a
    key that does not match the certificate or a CA file without a certificate raises
    :class:`TLSFileError` naming the file and what it must hold.
    """
    if not cfg.grpc_ssl:
        return None
    from softnic.runtime.p4rt import ServerTLS

    assert cfg.grpc_cert is not None and cfg.grpc_key is not None  # parse_args checks
    cert = _read_pem("--grpc-server-cert", cfg.grpc_cert, "the server certificate")
    key = _read_pem("--grpc-server-key", cfg.grpc_key, "the server's private key")
    if _PEM_CERT not in cert:
        raise TLSFileError(f"--grpc-server-cert {cfg.grpc_cert} holds no certificate "
                           f"('{_PEM_CERT.decode()}' line); give the server certificate")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        ctx.load_cert_chain(cfg.grpc_cert, cfg.grpc_key, password=_no_passphrase)
    except TLSFileError:
        raise TLSFileError(f"--grpc-server-key {cfg.grpc_key} is passphrase-protected; give an "
                           "unencrypted key (as simple_switch_grpc needs too)") from None
    except ssl.SSLError as exc:
        why = f" ({exc.reason.lower().replace('_', ' ')})" if exc.reason else ""
        raise TLSFileError(f"--grpc-server-key {cfg.grpc_key} is not the private key of "
                           f"--grpc-server-cert {cfg.grpc_cert}, or one of them is not valid "
                           f"PEM{why}; give the certificate and the key made with it") from None
    root = None
    if cfg.grpc_cacert is not None:
        root = _read_pem("--grpc-server-cacert", cfg.grpc_cacert,
                         "the CA certificate that signs client certificates")
        try:
            ctx.load_verify_locations(cadata=root.decode("latin-1"))
        except (ssl.SSLError, ValueError):
            raise TLSFileError(f"--grpc-server-cacert {cfg.grpc_cacert} holds no valid "
                               "certificate; give the PEM certificate of the CA that signs client "
                               "certificates") from None
    return ServerTLS(cert_chain=cert, private_key=key, root_certs=root,
                     require_client_auth=cfg.grpc_client_auth)


def setup_logging(cfg: RunConfig) -> None:
    """Console and/or file logging at the chosen level; warnings always reach stderr."""
    root = logging.getLogger("softnic")
    root.handlers.clear()
    root.propagate = False
    fmt = logging.Formatter("[%(asctime)s.%(msecs)03d] [%(levelname)s] %(name)s: %(message)s",
                            "%H:%M:%S")
    level = LOG_LEVELS[cfg.log_level]
    if cfg.log_console:
        h: logging.Handler = logging.StreamHandler(sys.stderr)
        h.setLevel(level)
        h.setFormatter(fmt)
        root.addHandler(h)
    else:
        h = logging.StreamHandler(sys.stderr)
        h.setLevel(max(level, logging.WARNING))
        h.setFormatter(fmt)
        root.addHandler(h)
    if cfg.log_file is not None:
        fh = logging.FileHandler(cfg.log_file)
        fh.setLevel(level)
        fh.setFormatter(fmt)
        root.addHandler(fh)
    root.setLevel(level)


def _tracing(cfg: RunConfig) -> bool:
    return LOG_LEVELS[cfg.log_level] <= TRACE and (cfg.log_console or cfg.log_file is not None)


def _traced_handler(process: Any) -> Any:
    """Wrap ``process_packet`` with one log line per packet in and out (BMv2's console log)."""
    plog = logging.getLogger("softnic.packet")

    def handler(port: int, frame: bytes) -> list[tuple[int, bytes]]:
        plog.log(TRACE, "port %d: received packet of %d bytes", port, len(frame))
        out = process(port, frame)
        if not out:
            plog.log(TRACE, "port %d: packet produced no output (dropped or sent to CPU)", port)
        for egress, data in out:
            plog.log(TRACE, "port %d -> port %d: transmitting %d bytes", port, egress, len(data))
        return out

    return handler


def run(cfg: RunConfig, ready: threading.Event | None = None,
        stop: threading.Event | None = None) -> int:
    """Start switch, ports and P4Runtime server; block until ``stop`` (or a signal) is set."""
    try:
        tls = load_tls(cfg)  # first: a bad certificate or key stops us before anything starts
    except TLSFileError as exc:
        print(f"softnic run: error: {exc}", file=sys.stderr)
        return 1
    from softnic.runtime import switch as switch_mod  # imported late: keeps `--help` fast
    from softnic.runtime.p4rt import P4RuntimeServer

    stop = stop or threading.Event()
    trace = logging.getLogger("softnic.trace")
    if cfg.engine == "xdp":
        from softnic.runtime.xdp.engine import XdpSwitch
        sw: Any = XdpSwitch(cpu_port=cfg.cpu_port, drop_port=cfg.drop_port,
                            device_id=cfg.device_id, xdp_mode=cfg.xdp_mode)
    else:
        sw = switch_mod.Switch(**_switch_kwargs(switch_mod.Switch, cfg, trace))
    if cfg.program is not None:
        try:
            sw.load_json(json.loads(cfg.program.read_text()))
        except (OSError, ValueError) as exc:
            print(f"softnic run: cannot load {cfg.program}: {exc}", file=sys.stderr)
            return 1
        except Exception as exc:  # PipelineLoadError and friends from the engine
            print(f"softnic run: cannot load {cfg.program}: {exc}", file=sys.stderr)
            return 1

    ports = PortSet(cfg.ports, pcap_dir=cfg.pcap_dir)
    try:
        ports.open()
        if cfg.engine == "xdp":
            # the kernel forwards; the sockets only send what packet-out makes and the frames
            # the program hands back
            sw.set_transmit(ports.transmit)
            sw.attach_ports(cfg.ports, host_port=cfg.host_port)
    except PortError as exc:
        print(f"softnic run: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # BpfError: attaching failed
        ports.close()
        sw.close()
        print(f"softnic run: cannot attach the XDP program: {exc}", file=sys.stderr)
        return 1
    server = P4RuntimeServer(sw, cfg.device_id, cfg.cpu_port)
    _connect_transmit(server, ports)
    try:
        grpc_port = server.start(cfg.grpc_addr, tls)
    except Exception as exc:
        ports.close()
        print(f"softnic run: cannot start P4Runtime server on {cfg.grpc_addr}: {exc}",
              file=sys.stderr)
        return 1

    if cfg.engine != "xdp":
        process = sw.process_packet
        ports.start(_traced_handler(process) if _tracing(cfg) else process)
    host = cfg.grpc_addr.rpartition(":")[0]
    prog = str(cfg.program) if cfg.program is not None else "none (--no-p4)"
    port_list = " ".join(f"{n}@{i}" for n, i in sorted(cfg.ports.items())) or "none"
    cpu = cfg.cpu_port if cfg.cpu_port is not None else "none"
    security = ("" if tls is None else "; TLS, client certificates required"
                if cfg.grpc_client_auth else "; TLS")
    for note in cfg.notes:
        print(f"softnic run: note: {note}", file=sys.stderr)
    engine = "" if cfg.engine == "python" else f"; engine xdp ({cfg.xdp_mode})"
    print(f"softnic run: program {prog}; ports {port_list}; cpu port {cpu}; "
          f"P4Runtime on {host}:{grpc_port} device id {cfg.device_id}{security}{engine}",
          flush=True)
    if ready is not None:
        ready.set()
    try:
        while not stop.wait(0.5):  # a timed wait keeps the main thread responsive to signals
            pass
    finally:
        server.stop()
        if cfg.engine == "xdp":
            sw.close()
        ports.stop()
        log.info("stopped; port stats: %s", {n: vars(s) for n, s in ports.stats().items()})
    return 0


def _switch_kwargs(cls: Any, cfg: RunConfig, trace: logging.Logger) -> dict[str, Any]:
    """Constructor arguments the engine's Switch accepts (cpu port, trace callable)."""
    import inspect

    params = inspect.signature(cls).parameters
    kw: dict[str, Any] = {}
    if "cpu_port" in params:
        kw["cpu_port"] = cfg.cpu_port
    if "drop_port" in params:
        kw["drop_port"] = cfg.drop_port
    if "trace" in params and _tracing(cfg):
        kw["trace"] = lambda msg, *a: trace.log(TRACE, msg, *a)
    return kw


def _connect_transmit(server: Any, ports: PortSet) -> None:
    """Give the server the function that sends packet-out results out of the data ports."""
    setter = getattr(server, "set_transmit", None)
    if setter is not None:
        setter(ports.transmit)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        cfg = parse_args(argv)
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except UsageError as exc:
        print(f"softnic run: error: {exc}", file=sys.stderr)
        print("usage: softnic run [PROG.json | --no-p4] -i PORT@IFACE ... "
              "[-- --grpc-server-addr HOST:PORT --cpu-port N --grpc-server-ssl ...]  (see --help)",
              file=sys.stderr)
        return 2
    if cfg.engine == "xdp":
        from softnic.runtime.xdp.libbpf import missing_requirements
        missing = missing_requirements()
        if missing:
            print("softnic run: error: --engine xdp cannot run here: " + "; ".join(missing),
                  file=sys.stderr)
            return 2
    setup_logging(cfg)
    # The packet thread holds the GIL while it runs packets; the P4Runtime threads (packet-out
    # in, packet-in and digests out) wait for it. CPython hands the GIL over every 5 ms by
    # default, so each hop of a packet-out's round trip could wait that long: 20-30 ms per
    # control datagram under load. 0.5 ms keeps the hops short at a small cost in switches.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        log.info("signal %d: shutting down", signum)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    return run(cfg, stop=stop)


if __name__ == "__main__":
    sys.exit(main())
