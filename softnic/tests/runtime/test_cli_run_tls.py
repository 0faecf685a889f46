"""``softnic run``'s safe defaults: a loopback-only P4Runtime server unless an address is given,
and simple_switch_grpc's TLS options (server TLS, mutual TLS with client certificates).

Everything is real: the certificates are made here with ``cryptography``, the switch is a
``softnic run`` process and the clients are gRPC channels doing P4Runtime calls.
"""

from __future__ import annotations

import datetime
import ipaddress
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from softnic.netns import require_netns
from softnic.runtime.cli_run import (
    BMV2_DEFAULT_GRPC_ADDR,
    DEFAULT_GRPC_ADDR,
    UsageError,
    main,
    parse_args,
)

TLS_FLAGS = ("--grpc-server-ssl", "--grpc-server-cacert", "--grpc-server-cert",
             "--grpc-server-key", "--grpc-server-with-client-auth")


# --------------------------------------------------------------------------- certificates


@dataclass
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path  # an unrelated CA...
    other_client_cert: Path  # ...and a client certificate it signed
    other_client_key: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _cert(subject: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Certificate | None,
          issuer_key: ec.EllipticCurvePrivateKey, *, ca: bool = False,
          usage: x509.ObjectIdentifier | None = None,
          san: list[x509.GeneralName] | None = None) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    b = (x509.CertificateBuilder()
         .subject_name(name)
         .issuer_name(issuer.subject if issuer is not None else name)
         .public_key(key.public_key())
         .serial_number(x509.random_serial_number())
         .not_valid_before(now - datetime.timedelta(hours=1))
         .not_valid_after(now + datetime.timedelta(days=1))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
         .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                        critical=False))
    if ca:
        b = b.add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False,
            encipher_only=False, decipher_only=False), critical=True)
    else:
        b = b.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
            issuer_key.public_key()), critical=False)
    if usage is not None:
        b = b.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if san:
        b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
    return b.sign(issuer_key, hashes.SHA256())


def _write(path: Path, cert: x509.Certificate | None = None,
           key: ec.EllipticCurvePrivateKey | None = None) -> Path:
    if cert is not None:
        path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    else:
        assert key is not None
        path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return path


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    d = tmp_path_factory.mktemp("pki")
    ca_key, other_ca_key = _key(), _key()
    ca = _cert("softnic test CA", ca_key, None, ca_key, ca=True)
    other_ca = _cert("some other CA", other_ca_key, None, other_ca_key, ca=True)
    srv_key, cli_key, other_cli_key = _key(), _key(), _key()
    srv = _cert("softnic switch", srv_key, ca, ca_key, usage=ExtendedKeyUsageOID.SERVER_AUTH,
                san=[x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                     x509.DNSName("localhost")])
    cli = _cert("controller", cli_key, ca, ca_key, usage=ExtendedKeyUsageOID.CLIENT_AUTH)
    other_cli = _cert("intruder", other_cli_key, other_ca, other_ca_key,
                      usage=ExtendedKeyUsageOID.CLIENT_AUTH)
    return Pki(ca=_write(d / "ca.pem", ca), server_cert=_write(d / "server.pem", srv),
               server_key=_write(d / "server.key", key=srv_key),
               client_cert=_write(d / "client.pem", cli),
               client_key=_write(d / "client.key", key=cli_key),
               other_ca=_write(d / "other-ca.pem", other_ca),
               other_client_cert=_write(d / "other-client.pem", other_cli),
               other_client_key=_write(d / "other-client.key", key=other_cli_key))


# --------------------------------------------------------------------------- switch process


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Switch:
    """A ``softnic run --no-p4`` process (optionally wrapped, e.g. by ``unshare``)."""

    def __init__(self, args: list[str], prefix: list[str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [*(prefix or []), sys.executable, "-m", "softnic.cli", "run", "--no-p4", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.startup = self.proc.stdout.readline()
        if "P4Runtime on" not in self.startup:
            self.stop()
            raise AssertionError(f"softnic run did not start: {self.startup!r} {self.err}")
        self.addr = self.startup.split("P4Runtime on ")[1].split()[0]

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            _, self.err = self.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, self.err = self.proc.communicate()
        return self.proc.returncode


@pytest.fixture()
def switches() -> Iterator[list[Switch]]:
    started: list[Switch] = []
    yield started
    for sw in started:
        assert sw.stop() == 0, sw.err


def tls_args(pki: Pki, port: int, client_auth: bool = False) -> list[str]:
    """simple_switch_grpc's spelling: every gRPC option after ``--``."""
    args = ["--", "--grpc-server-addr", f"127.0.0.1:{port}", "--grpc-server-ssl",
            "--grpc-server-cert", str(pki.server_cert), "--grpc-server-key", str(pki.server_key)]
    if client_auth:
        args += ["--grpc-server-cacert", str(pki.ca), "--grpc-server-with-client-auth"]
    return args


# --------------------------------------------------------------------------- P4Runtime client


def secure_channel(addr: str, ca: Path, cert: Path | None = None,
                   key: Path | None = None) -> grpc.Channel:
    creds = grpc.ssl_channel_credentials(
        root_certificates=ca.read_bytes(),
        private_key=key.read_bytes() if key is not None else None,
        certificate_chain=cert.read_bytes() if cert is not None else None)
    return grpc.secure_channel(addr, creds)


def p4runtime_session(channel: grpc.Channel) -> tuple[str, int]:
    """Capabilities (unary) then primary arbitration on a StreamChannel, as a controller does;
    returns the API version and the arbitration status code."""
    with channel:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        caps = stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=10)
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = 0
        req.arbitration.election_id.low = 1
        stream = stub.StreamChannel(iter([req]), timeout=10)
        resp = next(stream)
        stream.cancel()
    assert resp.WhichOneof("update") == "arbitration"
    return caps.p4runtime_api_version, resp.arbitration.status.code


def refused(channel: grpc.Channel) -> grpc.StatusCode:
    """The status of a Capabilities call that must not get through."""
    with channel:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        with pytest.raises(grpc.RpcError) as exc:
            stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=5)
    code = exc.value.code()
    assert code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED), code
    return code


# --------------------------------------------------------------------------- default address


def test_default_address_is_loopback() -> None:
    assert DEFAULT_GRPC_ADDR == "127.0.0.1:9559"
    assert BMV2_DEFAULT_GRPC_ADDR == "0.0.0.0:9559"
    assert parse_args(["--no-p4"]).grpc_addr == "127.0.0.1:9559"
    assert parse_args(["--no-p4"]).notes == []


def _tcp_listeners(pid: int, port: int) -> set[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """Addresses LISTENing on ``port`` in pid's network namespace (IPv4-mapped IPv6 addresses,
    which gRPC's dual-stack sockets show, as IPv4)."""
    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            hexaddr, hexport = local.split(":")
            if state != "0A" or int(hexport, 16) != port:  # 0A: TCP_LISTEN
                continue
            raw = bytes.fromhex(hexaddr)  # 32-bit words in host (little-endian) order
            ip = ipaddress.ip_address(b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4)))
            mapped = getattr(ip, "ipv4_mapped", None)
            found.add(mapped or ip)
    return found


# A fresh network namespace, so 9559 is free whatever runs on this machine, with loopback and a
# non-loopback interface (one end of a veth pair, 192.0.2.1, TEST-NET-1).
NETNS_SETUP = ("ip link set lo up && ip link add snt-a type veth peer name snt-b && "
               "ip addr add 192.0.2.1/24 dev snt-a && ip link set snt-a up && "
               "ip link set snt-b up && exec \"$@\"")

CONNECT_SCRIPT = """
import socket, sys
for host in sys.argv[1:]:
    s = socket.socket()
    s.settimeout(3)
    print(host, "connected" if s.connect_ex((host, 9559)) == 0 else "refused")
"""


def test_run_without_address_listens_on_loopback_only() -> None:
    """``softnic run`` with no --grpc-server-addr: 127.0.0.1:9559, not 0.0.0.0 (nor ::)."""
    require_netns()
    sw = Switch([], prefix=["unshare", "--net", "--", "sh", "-c", NETNS_SETUP, "sh"])
    try:
        assert sw.addr == "127.0.0.1:9559"
        assert _tcp_listeners(sw.proc.pid, 9559) == {ipaddress.ip_address("127.0.0.1")}
        res = subprocess.run(["nsenter", "-t", str(sw.proc.pid), "-n", sys.executable, "-c",
                              CONNECT_SCRIPT, "127.0.0.1", "192.0.2.1"],
                             capture_output=True, text=True, timeout=30)
        assert res.returncode == 0, res.stderr
        assert res.stdout.split("\n")[:2] == ["127.0.0.1 connected", "192.0.2.1 refused"]
    finally:
        assert sw.stop() == 0, sw.err
    assert "note:" not in sw.err  # no "reachable from other hosts" warning on loopback


def test_all_interfaces_only_when_asked_and_then_warned() -> None:
    cfg = parse_args(["--no-p4", "--", "--grpc-server-addr", BMV2_DEFAULT_GRPC_ADDR])
    assert cfg.grpc_addr == "0.0.0.0:9559"
    assert any("plaintext and reachable from other hosts" in n for n in cfg.notes)
    for addr in ("[::1]:9559", "localhost:9559", "127.0.0.2:1"):
        assert parse_args(["--no-p4", "--grpc-server-addr", addr]).notes == []


def test_help_names_the_default_and_the_tls_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "default 127.0.0.1:9559, loopback only" in out
    assert "Unlike simple_switch_grpc, which listens on 0.0.0.0:9559 (all interfaces)" in out
    for flag in TLS_FLAGS:
        assert flag in out, flag


# --------------------------------------------------------------------------- TLS options


def test_tls_flags_before_and_after_double_dash(pki: Pki) -> None:
    tail = ["--grpc-server-ssl", "--grpc-server-cacert", str(pki.ca), "--grpc-server-cert",
            str(pki.server_cert), "--grpc-server-key", str(pki.server_key),
            "--grpc-server-with-client-auth"]
    after = parse_args(["--no-p4", "--", *tail])
    before = parse_args(["--no-p4", *tail])
    mixed = parse_args(["--no-p4", *tail[:3], "--", *tail[3:]])
    for cfg in (after, before, mixed):
        assert (cfg.grpc_ssl, cfg.grpc_client_auth) == (True, True)
        assert (cfg.grpc_cacert, cfg.grpc_cert, cfg.grpc_key) == (
            pki.ca, pki.server_cert, pki.server_key)
    plain = parse_args(["--no-p4"])
    assert (plain.grpc_ssl, plain.grpc_client_auth, plain.grpc_cert) == (False, False, None)


@pytest.mark.parametrize("argv,msg", [
    (["--grpc-server-ssl", "--grpc-server-key", "k"], "needs --grpc-server-cert"),
    (["--grpc-server-ssl", "--grpc-server-cert", "c"], "needs --grpc-server-key"),
    (["--", "--grpc-server-ssl", "--grpc-server-cert", "c", "--grpc-server-key", "k",
      "--grpc-server-with-client-auth"], "needs --grpc-server-cacert"),
    (["--grpc-server-cert", "c", "--grpc-server-key", "k"], "without --grpc-server-ssl"),
    (["--", "--grpc-server-with-client-auth"], "without --grpc-server-ssl"),
    (["--grpc-server-cert", "a", "--", "--grpc-server-cert", "b"], "different values"),
])
def test_bad_tls_combinations(argv: list[str], msg: str) -> None:
    with pytest.raises(UsageError, match=msg):
        parse_args(["--no-p4", *argv])


def test_tls_server_accepts_a_tls_client_and_refuses_plaintext(pki: Pki,
                                                                switches: list[Switch]) -> None:
    sw = Switch(tls_args(pki, free_port()))
    switches.append(sw)
    assert sw.startup.rstrip().endswith("; TLS")
    version, status = p4runtime_session(secure_channel(sw.addr, pki.ca))
    assert version and status == 0  # OK: this client is primary
    # no client certificate needed without --grpc-server-with-client-auth
    refused(grpc.insecure_channel(sw.addr))
    # the server presents the certificate it was given: a client trusting another CA refuses it
    refused(secure_channel(sw.addr, pki.other_ca))


def test_client_auth_requires_a_certificate_from_the_ca(pki: Pki,
                                                        switches: list[Switch]) -> None:
    sw = Switch(tls_args(pki, free_port(), client_auth=True))
    switches.append(sw)
    assert sw.startup.rstrip().endswith("; TLS, client certificates required")
    refused(secure_channel(sw.addr, pki.ca))  # no client certificate
    refused(secure_channel(sw.addr, pki.ca, pki.other_client_cert, pki.other_client_key))
    refused(grpc.insecure_channel(sw.addr))
    version, status = p4runtime_session(
        secure_channel(sw.addr, pki.ca, pki.client_cert, pki.client_key))
    assert version and status == 0


def _run_fails(args: list[str]) -> subprocess.CompletedProcess[str]:
    res = subprocess.run([sys.executable, "-m", "softnic.cli", "run", "--no-p4",
                          "--", "--grpc-server-addr", f"127.0.0.1:{free_port()}", *args],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr and "P4Runtime on" not in res.stdout
    return res


def test_missing_cert_file_is_a_clean_error(pki: Pki, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-cert.pem"
    res = _run_fails(["--grpc-server-ssl", "--grpc-server-cert", str(missing),
                      "--grpc-server-key", str(pki.server_key)])
    assert res.stderr.startswith("softnic run: error: cannot read --grpc-server-cert "
                                 f"{missing}: No such file or directory")
    assert "PEM file holding the server certificate" in res.stderr


@pytest.mark.parametrize("case", ["missing key", "directory as cacert", "not PEM",
                                  "key of another certificate", "CA file without a certificate",
                                  "passphrase-protected key"])
def test_bad_tls_files_are_clean_errors(case: str, pki: Pki, tmp_path: Path) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("hello\n")
    cert, key, ca = pki.server_cert, pki.server_key, pki.ca
    named = {"missing key": "--grpc-server-key", "directory as cacert": "--grpc-server-cacert",
             "not PEM": "--grpc-server-cert", "key of another certificate": "--grpc-server-key",
             "CA file without a certificate": "--grpc-server-cacert",
             "passphrase-protected key": "--grpc-server-key"}[case]
    if case == "missing key":
        key = tmp_path / "no-such.key"
    elif case == "directory as cacert":
        ca = tmp_path
    elif case == "not PEM":
        cert = junk
    elif case == "key of another certificate":
        key = pki.client_key
    elif case == "passphrase-protected key":
        key = tmp_path / "encrypted.key"
        plain = serialization.load_pem_private_key(pki.server_key.read_bytes(), password=None)
        key.write_bytes(plain.private_bytes(serialization.Encoding.PEM,
                                            serialization.PrivateFormat.PKCS8,
                                            serialization.BestAvailableEncryption(b"secret")))
    else:
        ca = pki.server_key  # PEM, but a key
    bad = {"--grpc-server-cert": cert, "--grpc-server-key": key, "--grpc-server-cacert": ca}
    res = _run_fails(["--grpc-server-ssl", "--grpc-server-cert", str(cert),
                      "--grpc-server-key", str(key), "--grpc-server-cacert", str(ca),
                      "--grpc-server-with-client-auth"])
    assert res.stderr.startswith("softnic run: error: "), res.stderr
    assert f"{named} {bad[named]}" in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
