// List expressions and slices (P4_16 spec 8.11 list expressions, 8.5 slices as l-values,
// 6.8 slices as out/inout arguments): a list as an in argument of struct type, a field list
// for hash, nested slices as l-values, slices passed to inout / out parameters.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; bit<16> r; }
struct headers_t { h_t h; }
struct meta_t { bit<8> unused; }
struct tr_t { bit<8> x; bit<8> y; bit<8> z; }

bit<8> sum3(in tr_t t) { return t.x + t.y + t.z; }
void set_nine(out bit<4> n) { n = 4w9; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action addn(inout bit<4> x) { x = x + 3; }
    apply {
        sm.egress_spec = 1;
        hdr.h.b = sum3({ 8w1, 8w2, hdr.h.a });
        hdr.h.c[7:4][3:0] = 4w5;
        hdr.h.c[7:4][2:1] = 2w0;
        addn(hdr.h.d[7:4]);
        set_nine(hdr.h.e[3:0]);
        hash(hdr.h.r, HashAlgorithm.identity, 16w0, { hdr.h.a, hdr.h.b }, 16w0xFFFF);
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
