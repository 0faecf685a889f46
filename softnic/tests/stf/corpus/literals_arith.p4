// Integer literals and arithmetic (P4_16 spec 8.6 bit<W>, 8.7 int<W>, 8.8 int literals,
// 8.11 casts, 8.5 concatenation and slices): literals take the type of the other operand
// (8w255 == -1 is true), bit<W> arithmetic wraps modulo 2^W, shifts by >= W give 0 (int<W>:
// all sign bits), |+| / |-| saturate, int<W> slices are bit<>, widening casts of int<W>
// sign-extend.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a; bit<8> s;
    bit<8> r0; bit<8> r1; bit<8> r2; bit<8> r3; bit<8> r4; bit<8> r5; bit<8> r6; bit<8> r7;
    bit<8> r8; bit<8> r9; bit<8> r10; bit<8> r11; bit<8> r12; bit<8> r13; bit<8> r14;
    bit<8> r15; bit<8> r16; bit<8> r17; bit<8> r18; bit<8> r19; bit<8> r20; bit<8> r21;
    bit<8> r22; bit<8> r23;
}
struct headers_t { h_t h; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        bit<8> a = hdr.h.a;
        int<8> sa = (int<8>)hdr.h.a;
        hdr.h.r0 = 0;
        if (8w255 == -1) { hdr.h.r0 = 1; }
        hdr.h.r1 = 0;
        if (a == -1) { hdr.h.r1 = 1; }
        bit<16> c = 8w10 ++ 8w252;
        hdr.h.r2 = c[15:8];
        hdr.h.r3 = c[7:0];
        hdr.h.r4 = a + 10;
        hdr.h.r5 = 8w5 - a;
        hdr.h.r6 = a << hdr.h.s;
        hdr.h.r7 = a >> hdr.h.s;
        hdr.h.r8 = (bit<8>)(sa >> hdr.h.s);
        hdr.h.r9 = a |+| 8w10;
        hdr.h.r10 = a |-| 8w10;
        hdr.h.r11 = (bit<8>)(sa |+| 8s100);
        hdr.h.r12 = (bit<8>)(sa |-| 8s100);
        hdr.h.r13 = sa[3:0] ++ sa[7:4];
        bit<16> wide = (bit<16>)((int<16>)sa);
        hdr.h.r14 = wide[15:8];
        hdr.h.r15 = wide[7:0];
        hdr.h.r16 = -a;
        hdr.h.r17 = a * 3;
        hdr.h.r18 = (bit<8>)((bit<4>)a);
        hdr.h.r19 = 0;
        if (sa < 0) { hdr.h.r19 = 1; }
        hdr.h.r20 = 8w200 / 8w7 + 8w200 % 8w7;
        hdr.h.r21 = ~a;
        hdr.h.r22 = a >> 8;
        hdr.h.r23 = a & -1;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
