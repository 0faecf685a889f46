// One action whose out/inout parameters several tables bind, each to its own location
// (p4c: LocalizeActions + DuplicateActions give every table its own copy, named alike).
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; }
struct H { h_t h; }
struct M { }

action bump(inout bit<8> x) { x = x + 1; }

parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control V(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action set(out bit<8> r, bit<8> v) { r = v; }
    action mark() { h.h.e = 0xEE; }
    table t1 { key = { h.h.a : exact; } actions = { set(h.h.b); mark; } }
    table t2 { key = { h.h.a : exact; } actions = { set(h.h.c); mark; } }
    table t3 { key = { h.h.a : exact; } actions = { bump(h.h.d); } default_action = bump(h.h.d); }
    table t4 { key = { h.h.a : exact; } actions = { bump(h.h.d); } default_action = bump(h.h.d); }
    apply {
        sm.egress_spec = 1;
        t1.apply();
        switch (t2.apply().action_run) {
            set: { h.h.e = 0x55; }
        }
        t3.apply();
        t4.apply();
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
