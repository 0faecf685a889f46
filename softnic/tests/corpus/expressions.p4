/* Expressions: precedence, casts, slices, concatenation, saturating arithmetic, shifts,
 * ternary, signed integers, struct initializers and lists, named arguments, functions,
 * new types, enums, minSizeInBytes. */
#include <core.p4>
#include <v1model.p4>
#include "include/common_headers.p4"

#define SHIFT(x, n) ((x) << (n))

type bit<32> flow_id_t;
typedef int<16> delta_t;

enum Verdict {
    PASS,
    FAIL
}

enum bit<4> Nibble {
    LOW  = 4w0x1,
    HIGH = 4w0xF
}

struct pair_t {
    bit<8> a;
    bit<8> b;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
}

struct meta_t {
    bit<32>   x;
    bit<32>   y;
    bit<8>    z;
    delta_t   d;
    flow_id_t flow;
    pair_t    pair;
    bool      flag;
    Verdict   verdict;
    bit<16>   hsize;
}

bit<8> max8(in bit<8> a, in bit<8> b) {
    return a > b ? a : b;
}

bit<32> mix(in bit<32> v, in bit<8> rot) {
    return ((v << 3) ^ (v >> 5)) + (bit<32>)rot;
}

parser EParser(packet_in pkt,
               out headers_t hdr,
               inout meta_t meta,
               inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr = hdr.ipv4);
        transition accept;
    }
}

control NoVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control EIngress(inout headers_t hdr,
                 inout meta_t meta,
                 inout standard_metadata_t standard_metadata) {
    action set_both(bit<8> first, bit<8> second) {
        meta.pair = { a = first, b = second };
    }

    apply {
        // arithmetic precedence: * before +, + before <<, << before &, & before ^, ^ before |
        meta.x = 1 + 2 * 3;
        meta.y = meta.x + 1 << 2 & 0xFF ^ 0x0F | 0x100;
        meta.x = (meta.x - 1) * 2 + 100 / 7 % 5;   // '/' and '%' only on compile-time ints
        meta.y = meta.y >> 1;
        meta.y = SHIFT(meta.y, 4);
        meta.x = ~meta.x & (bit<32>)-1;
        // saturating arithmetic and concatenation
        meta.z = hdr.ipv4.ttl |+| 8w200;
        meta.z = meta.z |-| 8w10;
        meta.x = hdr.ipv4.srcAddr[31:16] ++ hdr.ipv4.dstAddr[15:0];
        meta.y[7:0] = meta.z;
        // signed arithmetic and casts
        meta.d = (delta_t)-5;
        meta.d = meta.d - 16s3;
        meta.x = (bit<32>)(bit<16>)meta.d;
        meta.flow = (flow_id_t)meta.x;
        meta.y = (bit<32>)meta.flow;
        // comparisons, booleans, ternary
        meta.flag = meta.x != meta.y && !(meta.z >= 3) || meta.x < 5 && meta.y <= 9;
        meta.z = meta.flag ? 8w1 : 8w2;
        meta.z = max8(a = meta.z, b = 8w7);
        meta.x = mix(meta.x, 8w3);
        meta.verdict = meta.flag ? Verdict.PASS : Verdict.FAIL;
        if (meta.verdict == Verdict.FAIL) {
            meta.z = (bit<8>)(bit<4>)Nibble.HIGH;
        }
        // struct initializers, lists, named arguments
        set_both(second = 8w2, first = 8w1);
        meta.pair = { 8w3, 8w4 };
        meta.hsize = (bit<16>)hdr.ipv4.minSizeInBytes();
        bit<8> local = meta.pair.a + meta.pair.b;
        const bit<8> LIMIT = 8w100;
        if (local > LIMIT) {
            local = LIMIT;
        }
        hdr.ipv4.ttl = local;
        standard_metadata.egress_spec = 9w1;
    }
}

control NoEgress(inout headers_t hdr,
                 inout meta_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control NoCompute(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control EDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(EParser(), NoVerify(), EIngress(), NoEgress(), NoCompute(), EDeparser()) main;
