// A sub-parser applied twice from one state (P4_16 spec 13.7 parser invocation, 6.8 copy-in /
// copy-out): its in argument is a header field, its out argument a header, its inout argument
// a metadata field. The out header starts invalid at each call (p4c's inliner resets the
// headers of an out argument; the spec leaves an out value undefined), so a second call that
// does not extract leaves hdr.g invalid even though the first call extracted it.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; }
header g_t { bit<8> c; bit<8> d; }
struct headers_t { h_t h; g_t g; }
struct meta_t { bit<8> n; }

parser Sub(packet_in pkt, in bit<8> sel, out g_t g, inout bit<8> n) {
    state start {
        n = n + 1;
        transition select(sel) { 1: ext; default: accept; }
    }
    state ext { pkt.extract(g); n = n + 10; transition accept; }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    state start {
        pkt.extract(hdr.h);
        meta.n = hdr.h.b;
        sub.apply(pkt, 1, hdr.g, meta.n);
        sub.apply(pkt, hdr.h.a, hdr.g, meta.n);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; hdr.h.b = meta.n; }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.g); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
