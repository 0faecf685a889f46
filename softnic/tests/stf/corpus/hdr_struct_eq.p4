// == and != on headers and structs (P4_16 spec 8.17 operations on headers, 8.12 on structs;
// p4c's RemoveComplexComparisons): two headers are equal when both are invalid, or both are
// valid and all fields are equal; structs are equal when all members are.
#include <core.p4>
#include <v1model.p4>

header r_t { bit<8> sel; bit<8> e1; bit<8> e2; bit<8> e3; bit<8> e4; bit<8> e5; }
header p_t { bit<8> x; bit<8> y; }
struct pair_t { p_t u; p_t v; }
struct headers_t { r_t r; p_t p; p_t q; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.r);
        pkt.extract(hdr.p);
        transition select(hdr.r.sel) { 1: getq; default: accept; }
    }
    state getq { pkt.extract(hdr.q); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.r.e1 = 0;
        if (hdr.p == hdr.q) { hdr.r.e1 = 1; }
        hdr.r.e2 = 0;
        if (hdr.p != hdr.q) { hdr.r.e2 = 1; }
        pair_t s1;
        s1.u = hdr.p;
        s1.v = hdr.q;
        pair_t s2 = s1;
        if (s2.v.isValid()) { s2.v.y = hdr.r.sel; }
        hdr.r.e3 = 0;
        if (s1 == s2) { hdr.r.e3 = 1; }
        p_t n1;
        p_t n2;
        n1.setInvalid();
        n2.setInvalid();
        hdr.r.e4 = 0;
        if (n1 == n2) { hdr.r.e4 = 1; }
        hdr.r.e5 = 0;
        if (hdr.q == n1) { hdr.r.e5 = 1; }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.r); pkt.emit(hdr.p); pkt.emit(hdr.q); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
