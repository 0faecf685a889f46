"""The engine-independent parts of the P4Runtime service: encodings, config decoding, arbitration
and digest batching, exercised with real protobuf messages."""

from __future__ import annotations

import json
import time

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from softnic.runtime.api import Digest, MatchKey
from softnic.runtime.p4rt import bytestr, translate
from softnic.runtime.p4rt.arbitration import Arbiter
from softnic.runtime.p4rt.devconfig import parse_device_config
from softnic.runtime.p4rt.digests import DigestManager
from softnic.runtime.p4rt.errors import P4RTError
from softnic.runtime.p4rt.p4info import P4InfoIndex
from softnic.runtime.p4rt.streams import Stream
from softnic.tests.runtime import test_p4rt_fixture as fx


def test_bytestring_accepts_canonical_and_padded_rejects_overflow() -> None:
    assert bytestr.decode(b"\x05", 9, "x") == 5
    assert bytestr.decode(b"\x00\x05", 9, "x") == 5
    assert bytestr.encode(0) == b"\x00"
    assert bytestr.encode(0x1FF) == b"\x01\xff"
    with pytest.raises(P4RTError) as e:
        bytestr.decode(b"\x02\x00", 9, "port")  # 512 needs 10 bits
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT and "port" in e.value.message
    with pytest.raises(P4RTError):
        bytestr.decode(b"\x00\x00\x05", 9, "port")  # longer than ceil(9/8) bytes
    with pytest.raises(P4RTError):
        bytestr.decode(b"", 9, "port")


def _p4deviceconfig(device_data: bytes) -> bytes:
    """Serialize a PI P4DeviceConfig {reassign: true, extras: {}, device_data} by hand."""
    def varint(n: int) -> bytes:
        out = bytearray()
        while True:
            b = n & 0x7F
            n >>= 7
            out.append(b | (0x80 if n else 0))
            if not n:
                return bytes(out)
    return (b"\x08\x01" + b"\x12\x00" + b"\x1a" + varint(len(device_data)) + device_data)


def test_device_config_both_forms() -> None:
    raw = json.dumps({"a": 1}).encode()
    assert parse_device_config(b"  \n" + raw) == {"a": 1}
    assert parse_device_config(_p4deviceconfig(raw)) == {"a": 1}
    big = json.dumps({"pad": "x" * 300}).encode()  # multi-byte length varint
    assert parse_device_config(_p4deviceconfig(big))["pad"] == "x" * 300
    for bad in (b"", b"\x1a\x05ab", b"\x08\x01", b"{not json", _p4deviceconfig(b"[1]")):
        with pytest.raises(P4RTError) as e:
            parse_device_config(bad)
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT


@pytest.fixture
def index() -> P4InfoIndex:
    return P4InfoIndex(fx.p4info())


def _fm(field_id: int, **kw) -> p4runtime_pb2.FieldMatch:
    fm = p4runtime_pb2.FieldMatch(field_id=field_id)
    for kind, value in kw.items():
        getattr(fm, kind).CopyFrom(value)
    return fm


def test_match_rules(index: P4InfoIndex) -> None:
    lpm = index.table(fx.T_LPM)
    ok = _fm(1, lpm=p4runtime_pb2.FieldMatch.LPM(value=bytes([10, 0, 0, 0]), prefix_len=8))
    assert translate.decode_key(lpm, [ok]) == [MatchKey(value=0x0A000000, prefix_len=8)]
    host_bits = _fm(1, lpm=p4runtime_pb2.FieldMatch.LPM(value=bytes([10, 0, 0, 1]),
                                                         prefix_len=8))
    zero_len = _fm(1, lpm=p4runtime_pb2.FieldMatch.LPM(value=b"\x00", prefix_len=0))
    tern = index.table(fx.T_TERN)
    proto = _fm(2, exact=p4runtime_pb2.FieldMatch.Exact(value=b"\x11"))
    zero_mask = _fm(1, ternary=p4runtime_pb2.FieldMatch.Ternary(value=b"\x00", mask=b"\x00"))
    outside = _fm(1, ternary=p4runtime_pb2.FieldMatch.Ternary(value=b"\x03", mask=b"\x01"))
    wrong_kind = _fm(1, exact=p4runtime_pb2.FieldMatch.Exact(value=b"\x01"))
    for table, matches in ((lpm, [host_bits]), (lpm, [zero_len]), (tern, [proto, zero_mask]),
                           (tern, [proto, outside]), (tern, [proto, wrong_kind]),
                           (tern, []), (tern, [proto, proto]),
                           (lpm, [_fm(9, lpm=ok.lpm)])):
        with pytest.raises(P4RTError) as e:
            translate.decode_key(table, matches)
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    # the ternary field may be omitted (don't care); the exact one may not
    assert translate.decode_key(tern, [proto]) == [None, MatchKey(value=0x11)]
    with pytest.raises(P4RTError):
        translate.check_priority(tern, 0)
    with pytest.raises(P4RTError):
        translate.check_priority(lpm, 5)


def test_action_scope_and_params(index: P4InfoIndex) -> None:
    t = index.table(fx.T_EXACT)
    ta = p4runtime_pb2.TableAction()
    ta.action.action_id = fx.ACT_FWD
    with pytest.raises(P4RTError, match="missing parameter"):
        translate.decode_action(index, t, ta, for_default=False)
    ta.action.params.add(param_id=1, value=b"\x03")
    assert translate.decode_action(index, t, ta, False).params == [3]
    ta.action.action_id = fx.ACT_SET_NHOP  # not an action of t_exact
    with pytest.raises(P4RTError, match="not an action of table"):
        translate.decode_action(index, t, ta, False)


def _arb_status(s: Stream) -> int:
    msgs = []
    while True:
        try:
            m = s._q.get_nowait()
        except Exception:
            break
        msgs.append(m)
    assert msgs and msgs[-1].HasField("arbitration")
    return msgs[-1].arbitration.status.code


def test_arbitration_highest_election_id_wins_and_promotion() -> None:
    arb = Arbiter(device_id=0)
    a, b = Stream(), Stream()
    arb.join(a, "", (0, 5))
    assert _arb_status(a) == code_pb2.OK
    arb.join(b, "", (0, 9))
    assert _arb_status(a) == code_pb2.ALREADY_EXISTS  # everyone told of the new primary
    assert _arb_status(b) == code_pb2.OK
    assert arb.is_primary("", (0, 9)) and not arb.is_primary("", (0, 5))
    with pytest.raises(P4RTError):
        arb.join(Stream(), "", (0, 9))  # duplicate election id
    arb.leave(b)
    assert _arb_status(a) == code_pb2.OK  # promoted
    assert arb.primary("") is a


def test_digest_batching_ack_and_suppression(index: P4InfoIndex) -> None:
    sent: list = []
    mgr = DigestManager(lambda m: sent.append(m) or True)
    try:
        mgr.reset(index)
        info = index.digest(fx.D_LEARN)
        mgr.on_digest(Digest("learn_t", {"srcAddr": 1, "port": 2}))
        time.sleep(0.2)
        assert sent == []  # not configured: dropped
        cfg = p4runtime_pb2.DigestEntry.Config(max_timeout_ns=100_000_000, max_list_size=2,
                                               ack_timeout_ns=10_000_000_000)
        mgr.set_config(info, cfg)
        mgr.on_digest(Digest("learn_t", {"srcAddr": 1, "port": 2}))
        mgr.on_digest(Digest("learn_t", {"srcAddr": 3, "port": 4}))
        deadline = time.monotonic() + 15  # generous: a busy machine is only slower
        while not sent and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(sent) == 1 and len(sent[0].digest.data) == 2  # flushed at max_list_size
        dl = sent[0].digest
        members = [[m.bitstring for m in d.struct.members] for d in dl.data]
        assert members == [[b"\x01", b"\x02"], [b"\x03", b"\x04"]]
        mgr.on_digest(Digest("learn_t", {"srcAddr": 1, "port": 2}))  # unacked: suppressed
        time.sleep(0.3)
        assert len(sent) == 1
        mgr.ack(fx.D_LEARN, dl.list_id)
        mgr.on_digest(Digest("learn_t", {"srcAddr": 1, "port": 2}))
        deadline = time.monotonic() + 15
        while len(sent) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(sent) == 2 and sent[1].digest.list_id == dl.list_id + 1  # after timeout
    finally:
        mgr.stop()
