"""The host agent's control channel, as both ends speak it (the controller's
p4cache.controller.agents and the agent's p4cache_agent.control import this module).

JSON lines over TCP: one request object per line, one reply per request. Requests carry ``id``;
replies echo it and may come out of order (a fetch can wait for its fence while others are
answered), so several requests may be outstanding on one connection::

    {"id":1,"op":"fetch","key":"foo"}
      -> {"id":1,"ok":true,"found":true,"flags":0,"ttl":-1,"value_b64":"..."}
       | {"id":1,"ok":true,"found":false}
       | {"id":1,"ok":false,"error":"busy"}          fence timeout, flush owed or pending
    {"id":5,"op":"fetch","keys":["a","b"]}  one fence for all, then the reads, pipelined
      -> {"id":5,"ok":true,"items":[{"ok":true,"found":true,...}, {"ok":false,"error":"busy"}]}
                                          each item as a one-key fetch's reply, in key order
    {"id":2,"op":"unwatch","key":"foo"}   -> {"id":2,"ok":true}
    {"id":3,"op":"sync","keys":["a","b"]} -> {"id":3,"ok":true,"watched":2}
    {"id":4,"op":"status"}                -> {"id":4,"ok":true,"status":{...}}
    anything else                         -> {"id":...,"ok":false,"error":"..."}

Keys are memcached keys as latin-1 strings. Standard library only: the agent's install has
nothing else.
"""

from __future__ import annotations

import json
from typing import Any

DEFAULT_PORT = 11213          # the agent's --control port in the default topology

# -- operations
FETCH = "fetch"      # watch the key, wait for earlier writes (the fence), read it from memcached
UNWATCH = "unwatch"  # the key's lookup entry is gone: stop invalidating its writes
SYNC = "sync"        # the watch set := keys (first request on every connection)
STATUS = "status"    # the agent's counters and state
OPS = (FETCH, UNWATCH, SYNC, STATUS)

# -- fields: requests
ID = "id"
OP = "op"
KEY = "key"
KEYS = "keys"
# -- fields: replies
OK = "ok"
ERROR = "error"
FOUND = "found"
FLAGS = "flags"
TTL = "ttl"              # seconds left, -1 for none
VALUE_B64 = "value_b64"  # the value, base64
WATCHED = "watched"      # keys watched after a sync
ITEMS = "items"          # a many-key fetch's replies, one per key in order
STATUS_FIELD = STATUS    # a status reply's body

BUSY = "busy"            # the error of a fetch whose fence timed out
KEY_ENCODING = "latin-1"
LINE_MAX = 16 << 20      # longest request line the agent reads (a sync of every slot fits)
FETCH_KEYS_MAX = 256     # keys in one many-key fetch


def key_text(key: bytes) -> str:
    """A memcached key as it travels in a message."""
    return key.decode(KEY_ENCODING)


def key_bytes(text: str) -> bytes:
    """A key from a message; UnicodeEncodeError when it is not latin-1."""
    return text.encode(KEY_ENCODING)


def encode(message: dict[str, Any]) -> bytes:
    """One message as the line that carries it (compact JSON, newline-terminated)."""
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    """A received line's message; ValueError when it is not a JSON object."""
    message = json.loads(line)
    if not isinstance(message, dict):
        raise ValueError("a message is a JSON object")
    return message


def request(op: str, rid: int, **fields: Any) -> dict[str, Any]:
    """A request: ``op`` with its ``id`` and fields (``key=``, ``keys=``)."""
    return {ID: rid, OP: op, **fields}
