/* Expressions: precedence, casts, slices, concatenation, saturating arithmetic, shifts,
 * ternary, signed integers, struct initializers and lists, named arguments, functions,
 * new types, enums, minSizeInBytes.
 *
 * Every intermediate value is also copied into the ``report`` header, emitted after IPv4, so
 * a test can check each one (softnic/tests/frontend/test_expressions_values.py). */
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

// one field per value computed in EIngress, in the order they are computed
header expr_report_t {
    bit<32> mul_add;      // 1 + 2 * 3
    bit<32> prec_chain;   // x + 1 << 2 & 0xFF ^ 0x0F | 0x100
    bit<32> div_mod;      // (x - 1) * 2 + 100 / 7 % 5
    bit<32> shr;          // y >> 1
    bit<32> shl_macro;    // SHIFT(y, 4)
    bit<32> not_and;      // ~x & (bit<32>)-1
    bit<8>  sat_add;      // ttl |+| 200
    bit<8>  sat_sub;      // z |-| 10
    bit<32> concat;       // srcAddr[31:16] ++ dstAddr[15:0]
    bit<32> slice_assign; // y[7:0] = z
    bit<16> neg_cast;     // (delta_t)-5
    bit<16> signed_sub;   // d - 16s3
    bit<32> widen;        // (bit<32>)(bit<16>)d
    bit<32> newtype;      // (flow_id_t)x
    bit<32> from_newtype; // (bit<32>)flow
    bit<8>  flag_ternary; // flag ? 1 : 2
    bit<8>  max_named;    // max8(a = z, b = 7)
    bit<32> mix_fn;       // mix(x, 3)
    bit<8>  enum_branch;  // z after the Verdict.FAIL branch
    bit<8>  named_a;      // set_both(second = 2, first = 1)
    bit<8>  named_b;
    bit<8>  list_a;       // pair = { 3, 4 }
    bit<8>  list_b;
    bit<16> hsize;        // ipv4.minSizeInBytes()
    bit<8>  local_sum;    // pair.a + pair.b, capped at LIMIT
}

struct headers_t {
    ethernet_t    ethernet;
    ipv4_t        ipv4;
    expr_report_t report;
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
        hdr.report.setValid();
        // arithmetic precedence: * before +, + before <<, << before &, & before ^, ^ before |
        meta.x = 1 + 2 * 3;
        hdr.report.mul_add = meta.x;
        meta.y = meta.x + 1 << 2 & 0xFF ^ 0x0F | 0x100;
        hdr.report.prec_chain = meta.y;
        meta.x = (meta.x - 1) * 2 + 100 / 7 % 5;   // '/' and '%' only on compile-time ints
        hdr.report.div_mod = meta.x;
        meta.y = meta.y >> 1;
        hdr.report.shr = meta.y;
        meta.y = SHIFT(meta.y, 4);
        hdr.report.shl_macro = meta.y;
        meta.x = ~meta.x & (bit<32>)-1;
        hdr.report.not_and = meta.x;
        // saturating arithmetic and concatenation
        meta.z = hdr.ipv4.ttl |+| 8w200;
        hdr.report.sat_add = meta.z;
        meta.z = meta.z |-| 8w10;
        hdr.report.sat_sub = meta.z;
        meta.x = hdr.ipv4.srcAddr[31:16] ++ hdr.ipv4.dstAddr[15:0];
        hdr.report.concat = meta.x;
        meta.y[7:0] = meta.z;
        hdr.report.slice_assign = meta.y;
        // signed arithmetic and casts
        meta.d = (delta_t)-5;
        hdr.report.neg_cast = (bit<16>)meta.d;
        meta.d = meta.d - 16s3;
        hdr.report.signed_sub = (bit<16>)meta.d;
        meta.x = (bit<32>)(bit<16>)meta.d;
        hdr.report.widen = meta.x;
        meta.flow = (flow_id_t)meta.x;
        hdr.report.newtype = (bit<32>)meta.flow;
        meta.y = (bit<32>)meta.flow;
        hdr.report.from_newtype = meta.y;
        // comparisons, booleans, ternary
        meta.flag = meta.x != meta.y && !(meta.z >= 3) || meta.x < 5 && meta.y <= 9;
        meta.z = meta.flag ? 8w1 : 8w2;
        hdr.report.flag_ternary = meta.z;
        meta.z = max8(a = meta.z, b = 8w7);
        hdr.report.max_named = meta.z;
        meta.x = mix(meta.x, 8w3);
        hdr.report.mix_fn = meta.x;
        meta.verdict = meta.flag ? Verdict.PASS : Verdict.FAIL;
        if (meta.verdict == Verdict.FAIL) {
            meta.z = (bit<8>)(bit<4>)Nibble.HIGH;
        }
        hdr.report.enum_branch = meta.z;
        // struct initializers, lists, named arguments
        set_both(second = 8w2, first = 8w1);
        hdr.report.named_a = meta.pair.a;
        hdr.report.named_b = meta.pair.b;
        meta.pair = { 8w3, 8w4 };
        hdr.report.list_a = meta.pair.a;
        hdr.report.list_b = meta.pair.b;
        meta.hsize = (bit<16>)hdr.ipv4.minSizeInBytes();
        hdr.report.hsize = meta.hsize;
        bit<8> local = meta.pair.a + meta.pair.b;
        const bit<8> LIMIT = 8w100;
        if (local > LIMIT) {
            local = LIMIT;
        }
        hdr.report.local_sum = local;
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
        pkt.emit(hdr.report);
    }
}

V1Switch(EParser(), NoVerify(), EIngress(), NoEgress(), NoCompute(), EDeparser()) main;
