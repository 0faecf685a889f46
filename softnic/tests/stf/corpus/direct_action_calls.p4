// Direct action calls (P4_16 spec 14.1 actions, 6.8 calling convention): an action called
// directly takes run-time expressions for its directionless parameters; an action with a
// directional (inout) parameter is listed in a table with that argument bound and its
// directionless parameter from the control plane; actions call actions.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; }
struct headers_t { h_t h; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action g(bit<8> v) { hdr.h.b = v + 1; }
    action setx(inout bit<8> x, bit<8> val) { x = x + val; }
    action two(bit<8> p, bit<8> q) { hdr.h.d = p - q; }
    action g2(bit<8> v) { hdr.h.e = v * 2; }
    action outer() { g2(hdr.h.a + 2); }
    table t {
        key = { hdr.h.a : exact; }
        actions = { setx(hdr.h.c); NoAction; }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        g(hdr.h.a);
        hdr.h.c = 0x10;
        t.apply();
        setx(hdr.h.c, hdr.h.a);
        two(hdr.h.a, 8w3);
        outer();
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
