"""The fixed part of every generated program: types, the engine's maps and helpers.

Names and layouts here are read by the engine (``softnic.runtime.xdp``) through
:mod:`softnic.compiler.xdp.abi`; change them together.
"""

from __future__ import annotations

from softnic.compiler.xdp.abi import (
    CFG_XDP_TX,
    ETH_HLEN,
    NO_PIN,
    RUN_MAGIC,
    STATS,
    VERDICT_CPU,
    VERDICT_DROP,
    VERDICT_PORT,
)

_STAT_DEFINES = "\n".join(f"#define {name} {i}" for i, name in enumerate(STATS))

PRELUDE = f"""
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* Ends clang's freedom to hoist loads across statements: a long straight run of byte loads and
 * stores (a 256-byte header) would otherwise be scheduled loads-first and spill past the
 * 512-byte BPF stack. */
#define BARRIER() asm volatile("" ::: "memory")
/* The index v has just passed its bounds check: clang may not compute with v (an offset into
 * the state) ahead of the check, which it does when it can prove the check dead on that path;
 * the verifier must see the bounded value. */
#define INDEX_CHECKED(v) asm volatile("" : "+r"(v))
/* x unchanged for 1 <= x <= max (a power of two), in a form the verifier can bound to
 * [1, max]: helper sizes must be known non-zero and within the buffer. */
#define SIZE_IN(x, max) ((((x) - 1) & ((max) - 1)) + 1)
#define STACK_DIRTY(s, n) do {{ if (st->hw[s] < (n)) st->hw[s] = (n); }} while (0)
#define PKT_MASK (PKT_MAX - 1)
#define OUT_MASK (OUT_SIZE - 1)
#define HB_MASK (HB_SIZE - 1)
#define RUN_MAGIC {RUN_MAGIC:#x}
#define VERDICT_DROP {VERDICT_DROP}
#define VERDICT_PORT {VERDICT_PORT}
#define VERDICT_CPU {VERDICT_CPU}
#define NO_PIN {NO_PIN:#x}
{_STAT_DEFINES}
#define NSTATS {len(STATS)}
#define NO_ROOM (-2)
#define HEAD_GROW 192 /* of the 256 bytes of headroom, less struct xdp_frame and metadata */
#define CFG_XDP_TX {CFG_XDP_TX}
#define ETH_HLEN {ETH_HLEN}

/* One packet's state: the PHV as 64-bit words, the running action's parameters, scratch for
 * keys and calculations, the deparsed headers and a copy of the received frame. Per CPU: an
 * XDP program never runs twice at once on one CPU. */
struct p4_state {{
    __u64 f[PHV_WORDS];
    __u32 hw[NSTACKS]; /* per header stack: elements below it may have been written */
    __u64 ap[PARAM_WORDS];
    __u64 kw[KB_SIZE / 8];
    __u8 kb[KB_SIZE] __attribute__((aligned(8)));
    __u8 hb[HB_SIZE];
    __u8 out[OUT_SIZE];
    __u8 pkt[2 * PKT_MAX];
    __u64 truncate;
    __u32 len, plen, pos, pstate, steps, step_limit, exited, abort, action, hit, too_big;
    __u32 pin_set, pin_off, outlen, final_len;
    __s32 hit_idx;
}};

/* In the XDP metadata area of a frame run by BPF_PROG_TEST_RUN: port and time in, verdict out */
struct run_meta {{
    __u32 magic;
    __u32 port;
    __u64 now_us;
    __u32 len;      /* in: the frame's length; it may come in padded to an Ethernet header */
    __u32 verdict;  /* out */
    __u32 pin_off;  /* out: where the packet_in header is, NO_PIN if none */
    __u32 out_len;  /* out: the new frame's length (it may leave padded) */
}};

struct run_config {{
    __u64 t0_us;      /* bpf_ktime_get_ns() / 1000 at the engine's start */
    __u32 host_port;  /* the port whose packets go up the local stack (XDP_PASS) */
    __u32 flags;      /* CFG_XDP_TX: send back out of the ingress port with XDP_TX */
}};

struct counter_val {{
    __u64 packets;
    __u64 bytes;
}};

struct entry_val {{
    __u32 action;
    __u32 pad;
    __u64 packets;
    __u64 bytes;
    __u64 p[];
}};

struct digest_rec {{
    __u32 list_id;
    __u32 pad;
    __u64 w[DIGEST_WORDS];
}};

/* A frame handed to the runtime: one for the CPU port (a packet-in), or one that could not be
 * built in place (no room to grow it), which the runtime transmits on `port`. */
struct pin_rec {{
    __u32 len;
    __u32 pin_off;
    __u32 port;
    __u32 pad;
    __u8 data[2 * OUT_SIZE + PKT_MAX]; /* room for a masked header length, then the payload */
}};

struct {{
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct p4_state);
}} p4_state SEC(".maps");

struct {{
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct run_config);
}} config SEC(".maps");

struct {{
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, NSTATS);
    __type(key, __u32);
    __type(value, __u64);
}} stats SEC(".maps");

/* ifindex -> P4 port, for frames that arrive on an interface */
struct {{
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 512);
    __type(key, __u32);
    __type(value, __u32);
}} if_ports SEC(".maps");

/* P4 port -> interface, for XDP_REDIRECT */
struct {{
    __uint(type, BPF_MAP_TYPE_DEVMAP);
    __uint(max_entries, 512);
    __type(key, __u32);
    __type(value, __u32);
}} tx_ports SEC(".maps");

struct {{
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 1 << 20);
}} digests SEC(".maps");

struct {{
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 1 << 22);
}} packet_in SEC(".maps");

static __always_inline void stat_add(__u32 which)
{{
    __u64 *v = bpf_map_lookup_elem(&stats, &which);
    if (v)
        __sync_fetch_and_add(v, 1);
}}

/* v & mask, done even where clang can prove it changes nothing: the verifier cannot. */
static __always_inline __u64 opaque_mask(__u64 v, const __u64 mask)
{{
    asm volatile("%0 &= %1" : "+r"(v) : "i"(mask));
    return v;
}}

static __always_inline __u64 sext(__u64 v, __u32 w)
{{
    __u32 s = 64 - w;
    return (__u64)(((__s64)(v << s)) >> s);
}}

/* A calculation's input being appended to st->hb when its parts are not whole bytes: n whole
 * bytes written, then the low na (< 8) bits of acc still pending. */
struct bit_writer {{
    __u64 acc;
    __u32 na;
    __u32 n;
}};

/* Appends the low w (1 <= w <= 56) bits of v, most significant first. */
static __always_inline void bits_put(struct p4_state *st, struct bit_writer *b, __u64 v, __u32 w)
{{
    __u64 acc = (b->acc << w) | (v & ((1ULL << w) - 1));
    __u32 na = b->na + w;
    for (int i = 0; i < 8; i++) {{
        if (na < 8)
            break;
        na -= 8;
        st->hb[b->n & HB_MASK] = (__u8)(acc >> na);
        b->n++;
    }}
    b->acc = acc & ((1ULL << na) - 1);
    b->na = na;
}}

/* Ends the input with zero bits up to a whole byte, as BMv2 does. */
static __always_inline void bits_flush(struct p4_state *st, struct bit_writer *b)
{{
    if (b->na) {{
        st->hb[b->n & HB_MASK] = (__u8)(b->acc << (8 - b->na));
        b->n++;
        b->na = 0;
    }}
}}

/* v clamped into int<w> (1 <= w < 64), as a sign-extended pattern: sat_cast */
static __always_inline __u64 ssat64(__s64 v, __u32 w)
{{
    __s64 hi = ((__s64)1 << (w - 1)) - 1;
    return (__u64)(v > hi ? hi : v < -hi - 1 ? -hi - 1 : v);
}}

/* v clamped into [0, max]: usat_cast to bit<w>, max = 2**w - 1 */
static __always_inline __u64 usat64(__s64 v, __u64 max)
{{
    return v < 0 ? 0 : (__u64)v > max ? max : (__u64)v;
}}

static __always_inline __u64 shl64(__u64 v, __u64 n)
{{
    return n >= 64 ? 0 : v << n;
}}

static __always_inline __u64 shr64(__u64 v, __u64 n)
{{
    return n >= 64 ? 0 : v >> n;
}}

/* A test run hands in a struct run_meta; a frame from an interface has none. */
static __always_inline int read_meta(struct xdp_md *ctx, int *test, __u32 *port, __u64 *now,
                                     __u32 *len, struct run_config *cfg)
{{
    void *data = (void *)(long)ctx->data;
    struct run_meta *m = (void *)(long)ctx->data_meta;
    if ((void *)(m + 1) <= data && m->magic == RUN_MAGIC) {{
        *test = 1;
        *port = m->port;
        *now = m->now_us;
        if (m->len < *len)
            *len = m->len;
        return 0;
    }}
    *test = 0;
    __u32 ifindex = ctx->ingress_ifindex;
    __u32 *p = bpf_map_lookup_elem(&if_ports, &ifindex);
    if (!p)
        return -1;
    *port = *p;
    *now = bpf_ktime_get_ns() / 1000 - cfg->t0_us;
    return 0;
}}

static __always_inline int finish(struct xdp_md *ctx, int test, __u32 verdict, __u32 port,
                                  __u32 pin_off, __u32 out_len)
{{
    if (test) {{
        void *data = (void *)(long)ctx->data;
        struct run_meta *m = (void *)(long)ctx->data_meta;
        if ((void *)(m + 1) <= data) {{
            m->verdict = verdict;
            m->port = port;
            m->pin_off = pin_off;
            m->out_len = out_len;
        }}
        return XDP_TX;
    }}
    return verdict == VERDICT_DROP ? XDP_DROP : XDP_TX;
}}

/* The new frame's length: the deparsed headers and the payload, cut by truncate(). */
static __always_inline __u64 rewrite_len(struct p4_state *st)
{{
    __u64 newlen = (__u64)st->outlen + (st->len - st->pos);
    if (st->truncate && newlen > st->truncate)
        newlen = st->truncate;
    st->final_len = newlen;
    return newlen;
}}

/* The new frame: the deparsed headers, then the bytes the parser did not consume (the payload).
 * The payload stays where it is in the frame: when the headers grow or shrink, the frame's start
 * moves (bpf_xdp_adjust_head) instead; only a growth larger than the headroom copies the payload
 * from st->pkt. A frame shorter than an Ethernet header cannot exist in XDP: from a test run it
 * leaves padded (its real length in run_meta), from an interface it is dropped. */
static __always_inline int rewrite_frame(struct xdp_md *ctx, struct p4_state *st, int test)
{{
    __u32 olen = st->outlen;
    __u32 len = st->len;
    __u32 pos = st->pos;
    __u32 flen = bpf_xdp_get_buff_len(ctx);
    if (olen > OUT_SIZE || pos > len || len > flen)
        return -1;
    __u32 payload = len - pos;
    __u64 newlen = rewrite_len(st);
    if (newlen < ETH_HLEN) {{
        if (!test)
            return -1;
        newlen = ETH_HLEN;
    }}
    int copy = 0;
    int dh = (int)olen - (int)pos;
    if (dh && payload) {{
        if (bpf_xdp_adjust_head(ctx, -dh) == 0)
            flen += dh;
        else if (len <= PKT_MAX)
            copy = 1;
        else
            return -1;
    }}
    int delta = (int)newlen - (int)flen;
    if (delta > 0 && bpf_xdp_adjust_tail(ctx, delta)) {{
        /* Not enough tailroom (a veth gives ~32 bytes): when nothing follows the headers,
         * start them earlier instead, in the headroom (XDP guarantees 256 bytes). */
        if (payload)
            return NO_ROOM;
        if (bpf_xdp_adjust_head(ctx, -delta)) {{
            if (delta <= HEAD_GROW || bpf_xdp_adjust_head(ctx, -HEAD_GROW) ||
                bpf_xdp_adjust_tail(ctx, delta - HEAD_GROW))
                return NO_ROOM;
        }}
    }} else if (delta < 0 && bpf_xdp_adjust_tail(ctx, delta)) {{
        return -1;
    }}
    __u32 hlen = olen < newlen ? olen : (__u32)newlen;
    if (hlen > 0 && hlen <= OUT_SIZE &&
        bpf_xdp_store_bytes(ctx, 0, st->out, SIZE_IN(hlen, OUT_SIZE)))
        return -1;
    if (!copy)
        return 0;
    __u32 plen = (__u32)newlen - hlen;
    if (plen > payload)
        plen = payload;
    if (plen == 0)
        return 0;
    if (pos >= PKT_MAX || plen > PKT_MAX)
        return -1;
    return bpf_xdp_store_bytes(ctx, hlen, st->pkt + (pos & PKT_MASK), SIZE_IN(plen, PKT_MAX)) ?
        -1 : 0;
}}

/* The frame st describes (headers in st->out, payload in the copy) into a ring buffer record. */
static __always_inline int to_runtime(struct p4_state *st, __u32 port)
{{
    __u32 olen = st->outlen;
    __u32 pos = st->pos;
    __u32 len = st->len;
    __u32 n = st->final_len;
    if (olen > OUT_SIZE || pos > len || len > PKT_MAX || pos >= PKT_MAX) {{
        stat_add(STAT_REWRITE_FAILED);
        return XDP_DROP;
    }}
    struct pin_rec *r = bpf_ringbuf_reserve(&packet_in, sizeof(*r), 0);
    if (!r) {{
        stat_add(STAT_PACKET_IN_LOST);
        return XDP_DROP;
    }}
    __u32 hlen = olen < n ? olen : n;
    __u32 plen = n - hlen;
    if (plen > len - pos)
        plen = len - pos;
    if (hlen > 0 && hlen <= OUT_SIZE)
        bpf_probe_read_kernel(r->data, SIZE_IN(hlen, OUT_SIZE), st->out);
    if (plen > 0 && plen <= PKT_MAX && hlen <= OUT_SIZE)
        bpf_probe_read_kernel(r->data + opaque_mask(hlen, 2 * OUT_SIZE - 1),
                              SIZE_IN(plen, PKT_MAX), st->pkt + (pos & PKT_MASK));
    r->len = hlen + plen;
    r->pin_off = st->pin_set ? st->pin_off : NO_PIN;
    r->port = port;
    bpf_ringbuf_submit(r, 0);
    return XDP_DROP;
}}

static __always_inline int deliver(struct xdp_md *ctx, struct p4_state *st, int test,
                                   struct run_config *cfg, __u32 in_port, __u32 eport,
                                   __u32 cpu_port)
{{
    __u32 pin = st->pin_set ? st->pin_off : NO_PIN;
    if (eport == cpu_port)
        return test ? finish(ctx, 1, VERDICT_CPU, eport, pin, st->final_len) :
            to_runtime(st, eport);
    if (test)
        return finish(ctx, 1, VERDICT_PORT, eport, pin, st->final_len);
    if (eport == in_port && (cfg->flags & CFG_XDP_TX))
        return XDP_TX; /* else the devmap: a veth wakes its peer for XDP_TX only if the peer
                        * runs XDP itself, for a redirect if the peer has NAPI (GRO) on */
    if (eport == cfg->host_port)
        return XDP_PASS;
    return bpf_redirect_map(&tx_ports, eport, XDP_DROP);
}}
"""


def _crc_table(poly_reflected: int) -> list[int]:
    out = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly_reflected if c & 1 else c >> 1
        out.append(c)
    return out


def _table_c(name: str, ctype: str, values: list[int]) -> list[str]:
    rows = [", ".join(f"{v:#x}" for v in values[i:i + 8]) for i in range(0, 256, 8)]
    return [f"static const {ctype} {name}[256] = {{"] + [f"    {r}," for r in rows] + ["};"]


def hash_helpers() -> list[str]:
    """BMv2's hash algorithms over ``hb[0..n)``: crc32 (zlib's), crc16 (ARC), csum16 (RFC
    1071), xor16, identity, random. Loops are bounded by the buffer size."""
    return [
        *_table_c("crc32_tab", "__u32", _crc_table(0xEDB88320)),
        *_table_c("crc16_tab", "__u16", _crc_table(0xA001)),
        "",
        "static __always_inline __u64 hash_crc32(const __u8 *b, __u32 n)",
        "{",
        "    __u32 c = 0xffffffff;",
        "    for (__u32 i = 0; i < HB_SIZE; i++) {",
        "        if (i >= n)",
        "            break;",
        "        c = crc32_tab[(c ^ b[i]) & 0xff] ^ (c >> 8);",
        "    }",
        "    return c ^ 0xffffffff;",
        "}",
        "",
        "static __always_inline __u64 hash_crc16(const __u8 *b, __u32 n)",
        "{",
        "    __u32 c = 0;",
        "    for (__u32 i = 0; i < HB_SIZE; i++) {",
        "        if (i >= n)",
        "            break;",
        "        c = crc16_tab[(c ^ b[i]) & 0xff] ^ (c >> 8);",
        "    }",
        "    return c & 0xffff;",
        "}",
        "",
        "static __always_inline __u64 hash_csum16(const __u8 *b, __u32 n)",
        "{",
        "    __u32 s = 0;",
        "    for (__u32 i = 0; i < HB_SIZE; i += 2) {",
        "        if (i >= n)",
        "            break;",
        "        __u32 lo = i + 1 < n ? b[(i + 1) & HB_MASK] : 0;",
        "        s += ((__u32)b[i] << 8) | lo;",
        "    }",
        "    s = (s & 0xffff) + (s >> 16);",
        "    s = (s & 0xffff) + (s >> 16);",
        "    return ~s & 0xffff;",
        "}",
        "",
        "static __always_inline __u64 hash_xor16(const __u8 *b, __u32 n)",
        "{",
        "    __u32 s = 0;",
        "    for (__u32 i = 0; i < HB_SIZE; i += 2) {",
        "        if (i >= n)",
        "            break;",
        "        __u32 lo = i + 1 < n ? b[(i + 1) & HB_MASK] : 0;",
        "        s ^= ((__u32)b[i] << 8) | lo;",
        "    }",
        "    return s;",
        "}",
        "",
        "/* HashAlgorithm.random: 64 random bits, whatever the input (as softnic's engine) */",
        "static __always_inline __u64 hash_random(const __u8 *b, __u32 n)",
        "{",
        "    return ((__u64)bpf_get_prandom_u32() << 32) | bpf_get_prandom_u32();",
        "}",
        "",
        "static __always_inline __u64 hash_identity(const __u8 *b, __u32 n)",
        "{",
        "    __u64 v = 0;",
        "    for (__u32 i = 0; i < 8; i++) {",
        "        if (i >= n)",
        "            break;",
        "        v = (v << 8) | b[i];",
        "    }",
        "    return v;",
        "}",
        "",
    ]
