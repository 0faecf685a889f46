"""What a user does first: drive ``softnic run``'s P4Runtime server with p4runtime-shell.

The same steps as ``python -m p4runtime_sh --grpc-addr 127.0.0.1:PORT --device-id 0
--election-id 0,1 --config P4INFO,JSON``, done in-process through ``p4runtime_sh.shell.setup``
(the interactive IPython front end cannot run under pytest), then the shell's own table-entry,
counter and multicast objects.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from p4runtime_sh import shell as sh
from p4runtime_sh.p4runtime import P4RuntimeWriteException

from softnic.runtime.p4rt import P4RuntimeServer
from softnic.tests.runtime import test_p4rt_fixture as fx
from softnic.tests.runtime.test_p4rt import eth_ipv4


@pytest.fixture
def shell(tmp_path: Path):
    sw = fx.make_switch()
    srv = P4RuntimeServer(sw, device_id=0, cpu_port=fx.CPU_PORT)
    port = srv.start("127.0.0.1:0")
    p4info = tmp_path / "p4rt_test.p4info.txt"
    p4info.write_text(fx.P4INFO_TXT)
    prog = tmp_path / "p4rt_test.json"
    prog.write_bytes(fx.bmv2_json_bytes())
    sh.setup(device_id=0, grpc_addr=f"127.0.0.1:{port}", election_id=(0, 1),
             config=sh.FwdPipeConfig(str(p4info), str(prog)), verbose=False)
    yield sw
    sh.teardown()
    srv.stop(0)


def test_p4runtime_shell_session(shell) -> None:
    sw = shell
    te = sh.TableEntry("MyIngress.t_exact")(action="MyIngress.fwd")
    te.match["hdr.ethernet.dstAddr"] = "08:00:00:00:02:02"
    te.action["port"] = "6"
    te.insert()
    assert sw.process_packet(1, eth_ipv4())[0][0] == 6
    got = list(sh.TableEntry("MyIngress.t_exact").read())
    assert len(got) == 1
    assert got[0].msg().action.action.params[0].value == b"\x06"
    with pytest.raises(P4RuntimeWriteException) as e:
        te.insert()
    assert "ALREADY_EXISTS" in str(e.value)

    tern = sh.TableEntry("MyIngress.t_tern")(action="MyIngress.mcast")
    tern.match["hdr.ipv4.srcAddr"] = "10.0.0.0&&&255.0.0.0"
    tern.match["hdr.ipv4.protocol"] = "17"
    tern.action["grp"] = "3"
    tern.priority = 1
    tern.insert()
    mcg = sh.MulticastGroupEntry(3).add(1, 0).add(2, 0)
    mcg.insert()
    assert sorted(p for p, _ in sw.process_packet(4, eth_ipv4())) == [1, 2]
    cells = list(sh.CounterEntry("MyIngress.c_ingress").read())
    assert len(cells) == 16
    [cell6] = [c for c in cells if c.index == 6]
    assert cell6.packet_count == 2  # both packets above hit fwd(6) in t_exact
    assert cell6.byte_count == 2 * len(eth_ipv4())

    te.delete()
    assert list(sh.TableEntry("MyIngress.t_exact").read()) == []
