"""The switches' command lines (no root needed): softnic's and simple_switch_grpc's flags."""

from __future__ import annotations

from pathlib import Path

from p4cache.lab.lab import switch_argv


def test_softnic_takes_the_grpc_flags_directly() -> None:
    argv = switch_argv("127.0.0.1:9559", 255, {2: "s1-eth2", 1: "s1-eth1"}, device_id=0,
                       log_file="/tmp/s1.log")
    assert Path(argv[0]).name == "softnic"
    assert argv[1:] == ["run", "--no-p4", "-i", "1@s1-eth1", "-i", "2@s1-eth2",
                        "--device-id", "0", "--log-file", "/tmp/s1.log",
                        "--grpc-server-addr", "127.0.0.1:9559", "--cpu-port", "255"]


def test_the_labs_switch_gets_no_device_id_or_log_file() -> None:
    argv = switch_argv("127.0.0.1:1234", 255, {1: "p4c9s1"})
    assert argv[1:] == ["run", "--no-p4", "-i", "1@p4c9s1", "--grpc-server-addr",
                        "127.0.0.1:1234", "--cpu-port", "255"]


def test_simple_switch_grpc_takes_them_after_a_double_dash() -> None:
    argv = switch_argv("127.0.0.1:50051", 255, {1: "s1-eth1"}, program="simple_switch_grpc",
                       device_id=1, log_file="/tmp/s1.log")
    assert argv == ["simple_switch_grpc", "--no-p4", "-i", "1@s1-eth1", "--device-id", "1",
                    "--log-file", "/tmp/s1.log", "--",
                    "--grpc-server-addr", "127.0.0.1:50051", "--cpu-port", "255"]
