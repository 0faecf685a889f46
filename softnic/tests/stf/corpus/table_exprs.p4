// Table applies as expressions (P4_16 spec 13.? "Invoking a table", 12.7 switch): switch on
// t.apply().action_run with a nested switch on another table's apply inside a case, default
// actions taking part in action_run, .hit in an if condition (.hit / .miss inside larger
// expressions and ?: are in eval_order.p4).
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
    action a1() { hdr.h.b = hdr.h.b | 1; }
    action a2() { hdr.h.b = hdr.h.b | 2; }
    table t1 { key = { hdr.h.a : exact; } actions = { a1; a2; } default_action = a2(); }
    table t2 { key = { hdr.h.a : exact; } actions = { a1; a2; } default_action = a1(); }
    table t3 { key = { hdr.h.a : exact; } actions = { a1; NoAction; } default_action = NoAction(); }
    table t4 { key = { hdr.h.a : exact; } actions = { NoAction; } default_action = NoAction(); }
    apply {
        sm.egress_spec = 1;
        hdr.h.b = 0;
        hdr.h.d = 0;
        switch (t1.apply().action_run) {
            a1: { hdr.h.d = 0x10; }
            a2: {
                switch (t2.apply().action_run) {
                    a1: { hdr.h.d = 0x21; }
                    default: { hdr.h.d = 0x2F; }
                }
            }
        }
        if (t3.apply().hit) { hdr.h.d = hdr.h.d + 1; }
        if (t4.apply().hit) { hdr.h.c = 0xAA; } else { hdr.h.c = 0xBB; }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
