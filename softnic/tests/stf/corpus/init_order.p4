// Initializers of control- and parser-level variables: left-to-right evaluation with side
// effects (P4_16 spec 8.1 and the copy-in at call time of 6.7), in declaration order, each time
// the control's apply starts; a parser's once when it starts, even if start is entered again.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; }
struct H { h_t h; }
struct M { bit<8> n; bit<8> m; bit<8> x; }
struct S { bit<8> x; bit<8> y; }

bit<8> one(inout bit<8> s) { s = 1; return 2; }

parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    bit<8> n = 5;
    S pt = { m.m, one(m.m) };
    state start {
        n = n + 1;
        transition select(p.lookahead<bit<8>>()) { 0: skip; default: done; }
    }
    state skip { p.advance(8); transition start; }
    state done { p.extract(h.h); m.n = n; m.x = pt.x + pt.y; transition accept; }
}
control V(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    S tmp = { h.h.a, one(h.h.a) };
    bit<8> later = h.h.a;
    apply {
        sm.egress_spec = 1;
        h.h.b = tmp.x;
        h.h.c = later;
        h.h.d = m.n;
        h.h.e = m.x + m.m;
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
