// An if inside an action whose condition is a compile-time constant: p4c's constant folding
// and SimplifyControlFlow remove it before the BMv2 back end looks for conditionals in
// actions, so p4c-bm2-ss accepts it even though the dead branch calls an extern
// (FIDELITY.md: "if in actions that constant folding removes").
#include <core.p4>
#include <v1model.p4>

const bool DEBUG = false;

header h_t { bit<8> a; bit<8> b; }
struct headers_t { h_t h; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action count_up() {
        if (DEBUG) { mark_to_drop(sm); } else { hdr.h.b = hdr.h.b + 1; }
        if (!DEBUG) { hdr.h.a = hdr.h.a + 0x10; }
    }
    table t {
        key = { hdr.h.a : exact; }
        actions = { count_up; NoAction; }
        default_action = count_up();
    }
    apply {
        sm.egress_spec = 1;
        count_up();
        t.apply();
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
