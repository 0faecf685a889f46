"""Rules the data plane (or the engine) is known to break, each with its smallest reproducer.

The rest of the suite runs the model with these deviations accepted (cache_oracle.
KNOWN_DEVIATIONS), so it can check everything else. Here the strict model is used and every test
is a strict xfail: once the data plane is fixed the test passes, xfail(strict) turns that into a
failure, and the deviation is to be removed from KNOWN_DEVIATIONS and the xfail marker from here.
"""

from __future__ import annotations

import cache_oracle as co
import cache_wire as w
import pytest
from cache_rig import CACHED, CLIENT_PORT, CLIENTS, SERVER_IP, Mismatch, Rig
from p4cache import dataplane as dp


@pytest.fixture(scope="module")
def strict():
    return Rig(deviations=frozenset())


def get(**ip_fields) -> bytes:
    return w.udp_frame(dp.get_request(7, b"hello"), src=CLIENTS[0], dst=SERVER_IP, sport=40000,
                       dport=co.MEMCACHED_PORT, **ip_fields)


def answered(rig: Rig, key: bytes) -> bool:
    return rig.send(CLIENT_PORT, rig.get_frame(key)).kind == "answered"


@pytest.mark.xfail(strict=True, raises=Mismatch,
                   reason=f"p4src ({co.DEV_IP_VERSION}): the parser never looks at ipv4.version")
def test_get_whose_ip_version_is_not_4_is_not_answered(strict):
    # Ethertype IPv4, version nibble 6 (or 0, 5, 15), checksum right: a host drops it (Linux
    # ip_rcv: version != 4), the switch answers it, with version 6 in the reply.
    strict.send(CLIENT_PORT, get(version=6))


@pytest.mark.xfail(strict=True, raises=Mismatch,
                   reason=f"p4src ({co.DEV_UDP_CHECKSUM}): the UDP checksum of a GET is not "
                          "verified (not in the stated rules: to decide)")
def test_get_with_a_wrong_udp_checksum_is_not_answered(strict):
    seg = w.udp(dp.get_request(7, b"hello"), sport=40000, dport=co.MEMCACHED_PORT, checksum=0x1234)
    strict.send(CLIENT_PORT, w.ether(w.ipv4(seg, src=CLIENTS[0], dst=SERVER_IP)))


def big_set(**ip_fields) -> bytes:
    # The first IPv4 fragment of a 3000-byte `set` (memcached reassembles it and applies it).
    body = dp.memcache_frame(8, b"set hello 0 0 3000\r\n") + b"x" * 1400
    return w.ether(w.ipv4(w.udp(body, sport=40001, dport=co.MEMCACHED_PORT, length=8 + 3000 + 40),
                          src=CLIENTS[0], dst=SERVER_IP, **ip_fields))


@pytest.mark.xfail(strict=True, raises=Mismatch,
                   reason=f"p4src ({co.DEV_WRITE_FRAGMENT}): the parser skips every datagram with "
                          "MF set, so a write too big for one frame never invalidates")
def test_write_in_a_first_fragment_invalidates(strict):
    assert answered(strict, b"hello")
    strict.send(CLIENT_PORT, big_set(flags=1))  # model: slot 5 invalid; engine: still valid
    assert not answered(strict, b"hello")  # what follows on the switch: the stale value served


@pytest.mark.xfail(strict=True, raises=Mismatch,
                   reason=f"p4src ({co.DEV_WRITE_OPTIONS}): the parser skips IPv4 with options, so "
                          "a write with options never invalidates")
def test_write_with_ip_options_invalidates(strict):
    strict.fill(CACHED[b"hello"], b"VALUE hello 0 1\r\nv\r\nEND\r\n")
    frame = w.udp_frame(dp.memcache_frame(8, b"delete hello\r\n"), src=CLIENTS[0], dst=SERVER_IP,
                        sport=40001, dport=co.MEMCACHED_PORT, options=b"\x94\x04\x00\x00")
    strict.send(CLIENT_PORT, frame)  # router-alert option; memcached deletes, the switch answers
