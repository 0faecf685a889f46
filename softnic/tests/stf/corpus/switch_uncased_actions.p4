// switch (t.apply().action_run) over a table whose actions do not all have a case (P4_16 spec
// 12.7.1): an action without a case, and the NoAction a table without default_action gets as
// its default, go on after the switch, or to the `default:` case when there is one.
// p4c-bm2-ss 1.2.4 writes a next_tables entry for every action of such a table; BMv2 1.15 ends
// the control after an action next_tables does not name, so a missing entry would skip the
// statements after the switch (p4c's gauntlet_exit_combination_2 is a sample of this shape).
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers_t { h_t h; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action leave() { hdr.h.b = 0x11; }
    action mark() { hdr.h.b = 0x22; }
    action other() { hdr.h.b = 0x33; }
    // no default_action: a miss runs NoAction, which is not in the list
    table plain { key = { hdr.h.a : exact; } actions = { leave; mark; } }
    table with_default {
        key = { hdr.h.a : exact; }
        actions = { leave; mark; other; }
        default_action = other();
    }
    apply {
        sm.egress_spec = 1;
        switch (plain.apply().action_run) {
            leave: {
                hdr.h.c = 0x01;
                exit;
            }
        }
        hdr.h.c = 0x05;
        switch (with_default.apply().action_run) {
            leave: { hdr.h.d = 0x0A; }
            default: { hdr.h.d = 0x0D; }
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
