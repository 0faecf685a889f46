/*
 * p4cache — headers, metadata and digests shared by every target.
 */
#ifndef P4CACHE_HEADER_P4
#define P4CACHE_HEADER_P4

#include "define.p4"
#include "reply_words.p4"

@controller_header("packet_in")
header packet_in_h {
    port_t  ingress_port;
    bit<7>  _pad;
}

@controller_header("packet_out")
header packet_out_h {
    port_t  egress_port;
    bit<7>  _pad;
}

header ethernet_h {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

header ipv4_h {
    bit<4>      version;
    bit<4>      ihl;
    bit<8>      diffserv;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

header ipv4_option_h {
    bit<32> word;
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

/* memcached's UDP frame header: every datagram starts with it. A reply echoes request_id. */
header memcache_h {
    bit<16> request_id;
    bit<16> seq;        // this datagram's number, from 0
    bit<16> total;      // datagrams in the message
    bit<16> reserved;   // must be 0
}

/* One byte of the ASCII command line. The command word, the blanks after it and the key are each
 * parsed byte by byte into a stack of these: their lengths are only known by looking at the bytes. */
header byte_h {
    bit<8> b;
}

/* "get ": the command word and its blank, parsed in one piece. */
header get_cmd_h {
    bit<32> word;
}

/* The "\r\n" that ends a single-key get. */
header crlf_h {
    bit<16> crlf;
}

/* A control datagram (UDP to CACHE_CTRL_PORT, or a packet-out): see docs/update-protocol.md. */
header cache_ctrl_h {
    bit<8>    op;
    bit<8>    status;
    slot_t    slot;
    version_t version;
    bit<16>   len;      // reply bytes that follow (OP_UPDATE); 0 = invalidate
}

/* The stored reply, in chunks chosen by the bits of (length - 1), then one tail byte. */
header chunk256_h { WORDS_32(WORD_FIELD, c256) }
header chunk128_h { WORDS_16(WORD_FIELD, c128) }
header chunk64_h  { WORDS_8(WORD_FIELD, c64) }
header chunk32_h  { WORDS_4(WORD_FIELD, c32) }
header chunk16_h  { WORDS_2(WORD_FIELD, c16) }
header chunk8_h   { WORDS_1(WORD_FIELD, c8) }
header chunk4_h   { bit<32> w0; }
header chunk2_h   { bit<16> w0; }
header chunk1_h   { bit<8> w0; }

struct headers_t {
    packet_out_h  packet_out;
    packet_in_h   packet_in;
    ethernet_h    ethernet;
    ipv4_h        ipv4;
    ipv4_option_h[IPV4_OPTION_WORDS] ipv4_options;
    udp_h         udp;
    memcache_h    memcache;
    cache_ctrl_h  ctrl;
    get_cmd_h     get_cmd;
    byte_h[CMD_MAX]    cmd;
    byte_h[SPACES_MAX] spaces;
    byte_h[KMAX]  key;
    byte_h[REST_MAX] rest;
    crlf_h        crlf;
    chunk256_h    c256;
    chunk128_h    c128;
    chunk64_h     c64;
    chunk32_h     c32;
    chunk16_h     c16;
    chunk8_h      c8;
    chunk4_h      c4;
    chunk2_h      c2;
    chunk1_h      c1;
    chunk1_h      tail;
}

/* What the switch reports for a hot key: the match key of cache_lookup, and the key's
 * estimated misses in the current epoch when it was sent (HotKeys). */
struct hot_key_digest_t {
    ipv4_addr_t    server_addr;
    bit<8>         key_len;
    bit<KEY_BITS>  key;
    bit<16>        count;
}

struct local_metadata_t {
    /* Filled by the parser. */
    bit<64>        cmd;          // command word, right-aligned
    bit<8>         cmd_len;
    bit<8>         spaces;       // blanks between command word and key
    bit<1>         spaces_overflow; // more than SPACES_MAX blanks
    bit<4>         ipv4_option_words; // left to parse
    bit<KEY_BITS>  key;          // key bytes, right-aligned (key_len tells leading zeros apart)
    bit<8>         key_len;
    bit<1>         key_overflow; // more than KMAX key bytes
    bit<8>         rest_len;     // bytes of the line after the key, before "\r\n"
    bit<1>         rest_overflow; // the line goes on past REST_MAX bytes, or ends at a bare "\n"
    bit<1>         rest_has_b;   // a "b" after the key (a meta command's base64-key flag?)
    bit<16>        chunk_bits;   // OP_UPDATE: ctrl.len - 1, whose bits choose the chunks
    /* Filled by the ingress controls. */
    bit<8>         kind;         // KIND_*
    ipv4_addr_t    server_addr;  // the memcached server a request or control datagram is about
    bit<1>         allowed;      // client in the allow-list
    bit<1>         trusted;      // control datagram from the CPU port or a trusted agent
    bit<1>         cached;       // cache_lookup hit
    bit<1>         flush;        // invalidate every slot (the datagram may change any item)
    slot_t         slot;
    bit<1>         from_cpu;     // arrived as a packet-out
    bit<1>         untrusted;    // control datagram from an unknown source (dropped)
    bit<8>         slot_op;      // SLOT_OP_*: what SlotStore does
    bit<8>         status;       // STATUS_* of a control datagram
    bit<1>         hit;          // answered from the slot
    bit<16>        reply_len;    // stored reply bytes of the slot answering
    bit<16>        payload_len;  // UDP payload bytes of a reply or acknowledgement
    bit<1>         refill;       // a cached key missed: ask the controller to refill its slot
    bit<1>         reported;     // hot-key digest sent
    bit<16>        hot_threshold; // misses in one epoch that make a key reported (admission)
    bit<1>         rewrite_ipv4; // the IPv4 header changed: recompute its checksum
}

#endif
