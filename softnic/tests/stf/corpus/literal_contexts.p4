// Implicit casts of int literals in every context (P4_16 spec 8.9.5: an arbitrary-precision
// int takes the type of the bit<W> value it meets): select cases and masks, const entries keys
// and action data, a default action argument, a function's return value, a list compared with
// a struct, the divisor of / and %, an initializer; with concatenation of signed operands
// (8.5) and a slice of a slice of a slice as an l-value (8.6).
#include <core.p4>
#include <v1model.p4>
header h_t {
    bit<8> a;
    bit<8> r0; bit<8> r1; bit<8> r2; bit<8> r3; bit<8> r4;
    bit<8> r5; bit<8> r6; bit<8> r7; bit<8> r8; bit<8> r9;
}
struct headers_t { h_t h; }
struct meta_t { bit<8> p; }
struct pair_t { bit<8> u; bit<8> v; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) {
            -1: s_ff;
            -16 &&& -16: s_fx;
            default: accept;
        }
    }
    state s_ff { meta.p = 1; transition accept; }
    state s_fx { meta.p = 2; transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
bit<8> minus_one() { return -1; }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set(bit<8> v) { hdr.h.r1 = v; }
    table t {
        key = { hdr.h.a : exact; }
        actions = { set; NoAction; }
        default_action = set(-3);
        const entries = { -1 : set(-2); 1 : set(3); }
    }
    apply {
        sm.egress_spec = 1;
        hdr.h.r0 = meta.p;
        t.apply();
        hdr.h.r2 = minus_one();
        int<8> sa = (int<8>)hdr.h.a;
        bit<16> c = 8w1 ++ sa;
        hdr.h.r3 = c[15:8];
        hdr.h.r4 = c[7:0];
        hdr.h.r5 = 0;
        if ((sa ++ 8w1) < 0) { hdr.h.r5 = 1; }
        pair_t m = { hdr.h.a, 1 };
        hdr.h.r6 = m == { -1, 1 } ? 8w1 : 8w0;
        hdr.h.r7 = 0;
        hdr.h.r7[7:1][5:1][1:1] = 1w1;
        hdr.h.r8 = hdr.h.a / -1 + hdr.h.a % -1;
        bit<8> x = -1;
        hdr.h.r9 = x ^ hdr.h.a;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
