// Header assignment (P4_16 spec 8.17: assigning a header copies its validity and, when valid,
// its fields; a local copy is a value, not a reference). The same with ?: is
// header_assign_cond.p4.
#include <core.p4>
#include <v1model.p4>

header r_t { bit<8> sel; bit<8> f; bit<8> g; }
header p_t { bit<8> x; bit<8> y; }
struct headers_t { r_t r; p_t p; p_t q; p_t o; }
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
        if (hdr.r.f == 1) { hdr.o = hdr.p; } else { hdr.o = hdr.q; }
        p_t tmp = hdr.p;
        tmp.x = tmp.x + 0x10;
        hdr.r.g = tmp.x;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.r); pkt.emit(hdr.p); pkt.emit(hdr.q); pkt.emit(hdr.o); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
