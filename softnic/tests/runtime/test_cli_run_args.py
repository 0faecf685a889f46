"""``softnic run`` argument parsing: simple_switch_grpc's command line, both ``--`` spellings."""

from __future__ import annotations

from pathlib import Path

import pytest

from softnic.runtime.cli_run import DEFAULT_GRPC_ADDR, UsageError, main, parse_args


@pytest.fixture()
def prog(tmp_path: Path) -> Path:
    p = tmp_path / "prog.json"
    p.write_text("{}")
    return p


def test_defaults_like_simple_switch_grpc_but_loopback(prog: Path) -> None:
    cfg = parse_args([str(prog), "-i", "1@veth1", "-i", "2@veth2"])
    assert cfg.program == prog
    assert cfg.ports == {1: "veth1", 2: "veth2"}
    assert (cfg.device_id, cfg.cpu_port, cfg.grpc_addr) == (0, None, DEFAULT_GRPC_ADDR)
    assert DEFAULT_GRPC_ADDR == "127.0.0.1:9559"  # simple_switch_grpc: 0.0.0.0:9559
    assert cfg.pcap_dir is None and cfg.log_console is False


def test_grpc_options_after_double_dash(prog: Path) -> None:
    cfg = parse_args([str(prog), "-i", "0@veth0", "--device-id", "3", "--log-console",
                      "--thrift-port", "9090", "--", "--grpc-server-addr", "127.0.0.1:50051",
                      "--cpu-port", "255"])
    assert (cfg.device_id, cfg.cpu_port, cfg.grpc_addr) == (3, 255, "127.0.0.1:50051")
    assert cfg.log_console and cfg.log_level == "trace"
    assert any("--thrift-port 9090 ignored" in n for n in cfg.notes)


def test_grpc_options_before_double_dash_mean_the_same(prog: Path) -> None:
    a = parse_args([str(prog), "-i", "1@v1", "--grpc-server-addr", "[::1]:1234", "--cpu-port",
                    "64"])
    b = parse_args([str(prog), "-i", "1@v1", "--", "--grpc-server-addr", "[::1]:1234",
                    "--cpu-port", "64"])
    assert (a.grpc_addr, a.cpu_port) == (b.grpc_addr, b.cpu_port) == ("[::1]:1234", 64)


def test_no_p4_and_logging_options(tmp_path: Path) -> None:
    cfg = parse_args(["--no-p4", "--interface", "5@eth5", "--log-level", "warn", "--log-file",
                      str(tmp_path / "log"), "--pcap-dir", str(tmp_path / "pc")])
    assert cfg.program is None and cfg.ports == {5: "eth5"}
    assert cfg.log_level == "warn" and cfg.log_file == tmp_path / "log"
    assert cfg.pcap_dir == tmp_path / "pc"
    assert parse_args(["--no-p4", "--pcap", "d"]).pcap_dir == Path("d")  # BMv2's spelling


@pytest.mark.parametrize("argv,msg", [
    ([], "expected PROG.json or --no-p4"),
    (["--no-p4", "PROG"], "either PROG.json or --no-p4"),
    (["missing.json"], "does not exist"),
    (["--no-p4", "-i", "veth1"], "PORT@IFACE"),
    (["--no-p4", "-i", "1@a", "-i", "1@b"], "port 1 is given twice"),
    (["--no-p4", "-i", "1@a", "-i", "2@a"], "interface a is given for two ports"),
    (["--no-p4", "--cpu-port", "1", "-i", "1@a"], "also a data port"),
    (["--no-p4", "--cpu-port", "600"], "0..511"),
    (["--no-p4", "--grpc-server-addr", "nohostport"], "HOST:PORT"),
    (["--no-p4", "--cpu-port", "1", "--", "--cpu-port", "2"], "different values"),
    (["--no-p4", "--", "--device-id", "1"], "unrecognized"),
    (["--no-p4", "--log-level", "loud"], "invalid choice"),
    (["--no-p4", "--bogus"], "unrecognized"),
])
def test_bad_arguments(argv: list[str], msg: str, tmp_path: Path,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    if "PROG" in argv:
        (tmp_path / "PROG").write_text("{}")
    with pytest.raises(UsageError, match=msg):
        parse_args(argv)


def test_main_reports_usage_errors_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--no-p4", "-i", "nonsense"]) == 2
    err = capsys.readouterr().err
    assert "softnic run: error:" in err and "PORT@IFACE" in err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "--grpc-server-addr" in out and "--no-p4" in out


def test_drop_port_like_simple_switch(prog: Path) -> None:
    assert parse_args([str(prog), "-i", "1@v1"]).drop_port == 511
    assert parse_args([str(prog), "-i", "1@v1", "--drop-port", "100"]).drop_port == 100
    with pytest.raises(UsageError, match="--drop-port must be in 0..511"):
        parse_args([str(prog), "-i", "1@v1", "--drop-port", "512"])
    with pytest.raises(UsageError, match="also a data port"):
        parse_args([str(prog), "-i", "1@v1", "--drop-port", "1"])


def test_host_port_needs_no_interface_but_not_the_cpu_or_drop_port(prog: Path) -> None:
    # A program on a server's own NIC: port 2 is the host's stack (XDP_PASS), no -i for it.
    cfg = parse_args([str(prog), "-i", "1@eth0", "--engine", "xdp", "--host-port", "2",
                      "--cpu-port", "255"])
    assert (cfg.host_port, cfg.ports) == (2, {1: "eth0"})
    for bad in ("255", "511"):
        with pytest.raises(UsageError, match="CPU or the drop port"):
            parse_args([str(prog), "-i", "1@eth0", "--engine", "xdp", "--host-port", bad,
                        "--cpu-port", "255"])
    with pytest.raises(UsageError, match="need --engine xdp"):
        parse_args([str(prog), "-i", "1@eth0", "--host-port", "2"])
