// An if in an action whose branches assign whole headers (header stack elements): p4c's mid
// end (Predication) turns each assignment into h = c ? s : h, which the BMv2 back end writes as
// assign_header with a conditional source; an if on a compile-time constant is folded away
// first, so its dead branch may call an extern. P4_16: assigning a header copies its validity
// and fields; the condition is evaluated once, before the branch runs.
#include <core.p4>
#include <v1model.p4>

const bool TRACE = false;

header h_t { bit<8> a; bit<8> b; }
struct headers_t { h_t h; h_t[2] s; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.s[0]);
        pkt.extract(hdr.s[1]);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action rotate(bit<8> k) {
        if (hdr.h.b == k) {
            hdr.s[0] = hdr.s[1];
        } else {
            hdr.s[1] = hdr.s[0];
            if (TRACE) { mark_to_drop(sm); }
        }
    }
    action copy_if_set() {
        if (hdr.h.b != 0) {
            if (hdr.s[0].a == 5) {
                hdr.s[0] = hdr.s[1];
                hdr.h.b = 0xff;
            }
        }
    }
    table t {
        key = { hdr.h.a : exact; }
        actions = { rotate; copy_if_set; NoAction; }
        const entries = {
            1 : rotate(3);
            2 : copy_if_set();
            4 : rotate(9);
        }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.h.b == 9) { hdr.s[1].setInvalid(); }
        t.apply();
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); pkt.emit(hdr.s[0]); pkt.emit(hdr.s[1]); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
