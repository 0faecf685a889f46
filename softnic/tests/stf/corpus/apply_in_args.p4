// Table applies as function arguments and inside ?: (P4_16 spec 8.1 left-to-right evaluation
// of arguments, 8.5 ?: evaluates only the chosen branch): in pick(t.apply().hit, m) the table
// runs (and its action changes m) before m is read; in a ?: a table in the branch not taken is
// not applied.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> m; bit<8> n; }
struct headers_t { h_t h; }
struct meta_t { bit<8> unused; }

bit<8> pick(in bool h, in bit<8> x) { return h ? x : 8w0xFF; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action mark() { hdr.h.m = hdr.h.m + 1; }
    action markn() { hdr.h.n = hdr.h.n + 1; }
    table t {
        key = { hdr.h.a : exact; }
        actions = { mark; NoAction; }
        default_action = NoAction();
    }
    table v {
        key = { hdr.h.a : exact; }
        actions = { markn; NoAction; }
        default_action = markn();
    }
    apply {
        sm.egress_spec = 1;
        hdr.h.b = pick(t.apply().hit, hdr.h.m);
        hdr.h.c = (hdr.h.a == 1 || hdr.h.a == 2) ? (v.apply().hit ? 8w1 : 8w2) : 8w3;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
