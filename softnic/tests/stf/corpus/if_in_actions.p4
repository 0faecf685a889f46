// if statements inside actions (accepted by p4c-bm2-ss when constant folding removes them or
// predication turns them into ?:, FIDELITY.md): a constant condition, a run-time condition,
// a condition that depends on an assignment earlier in the action with a later use, nested
// ifs with action data. (A constant-false branch calling an extern: if_in_action_folded.p4.)
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; bit<8> f; }
struct headers_t { h_t h; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action fold() { if (true) { hdr.h.b = 3; } else { hdr.h.b = 4; } }
    action pred() { if (hdr.h.a == 2) { hdr.h.c = 3; } else { hdr.h.c = 4; } }
    action dep() {
        hdr.h.d = hdr.h.a;
        if (hdr.h.d == 5) { hdr.h.d = 10; }
        hdr.h.e = hdr.h.d;
    }
    action nested(bit<8> lim) {
        if (hdr.h.a > lim) {
            if (hdr.h.a > lim + 10) { hdr.h.f = 2; } else { hdr.h.f = 1; }
        } else {
            hdr.h.f = 0;
        }
    }
    table t { key = { hdr.h.a : exact; } actions = { nested; } default_action = nested(8w3); }
    apply {
        sm.egress_spec = 1;
        fold();
        pred();
        dep();
        t.apply();
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
