// exit and return (P4_16 spec 12.4 return, 12.5 exit): exit in an action a table runs ends the
// action and the whole ingress control; exit in a sub-control ends its caller too; return in
// the apply block ends only that control. Egress, a separate block of the v1model pipeline,
// still runs.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; }
struct headers_t { h_t h; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control Sub(in bit<8> k, inout bit<8> x) {
    apply {
        if (k == 3) { exit; }
        x = 0x34;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    action stop() { hdr.h.b = 0x22; exit; }
    action go() { hdr.h.b = 0x21; }
    table t { key = { hdr.h.a : exact; } actions = { stop; go; } default_action = go(); }
    apply {
        sm.egress_spec = 1;
        hdr.h.b = 0;
        hdr.h.c = 0;
        hdr.h.d = 0;
        t.apply();
        sub.apply(hdr.h.a, hdr.h.c);
        if (hdr.h.a == 4) {
            hdr.h.d = 0x44;
            return;
        }
        hdr.h.d = 0x45;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { hdr.h.e = 0xEE; }
}
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
