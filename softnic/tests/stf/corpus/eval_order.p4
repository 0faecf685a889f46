// Left-to-right evaluation with side effects (P4_16 spec 8.1 "Expression evaluation order"):
// operands and arguments are evaluated left to right, a function call's side effects happen
// where the call stands; && and || short-circuit; ?: evaluates only the chosen branch; table
// applies and .hit/.miss can appear in expressions and conditions.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e;
    bit<8> f; bit<8> g; bit<8> k; bit<8> m; bit<8> n;
}
struct headers_t { h_t h; }
struct meta_t { bit<8> unused; }

bit<8> bump(inout bit<8> x) { x = x + 1; return x; }
bit<8> diff(in bit<8> p, in bit<8> q) { return p - q; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action mark() { hdr.h.m = hdr.h.m + 1; }
    table t { key = { hdr.h.a : exact; } actions = { NoAction; } default_action = NoAction(); }
    table u { key = { hdr.h.a : exact; } actions = { NoAction; } default_action = NoAction(); }
    table w { key = { hdr.h.a : exact; } actions = { NoAction; } default_action = NoAction(); }
    table v {
        key = { hdr.h.a : exact; }
        actions = { mark; NoAction; }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        hdr.h.b = 3;
        hdr.h.b = hdr.h.b + bump(hdr.h.b);
        hdr.h.c = 0;
        if (hdr.h.a == 1 && bump(hdr.h.c) == 1) { hdr.h.c = hdr.h.c + 10; }
        hdr.h.d = 0;
        if (hdr.h.a == 1 || bump(hdr.h.d) == 1) { hdr.h.d = hdr.h.d + 20; }
        hdr.h.f = 0;
        hdr.h.e = (hdr.h.a == 1) ? bump(hdr.h.f) : 8w7;
        hdr.h.g = 0;
        hdr.h.k = diff(bump(hdr.h.g), hdr.h.g);
        hdr.h.n = 0;
        if (t.apply().hit) { hdr.h.n = 1; } else { hdr.h.n = 2; }
        bool missed = u.apply().miss;
        if (missed) { hdr.h.n = hdr.h.n + 0x10; }
        if (!w.apply().hit && hdr.h.a == 2) { hdr.h.n = hdr.h.n + 0x40; }
        hdr.h.m = hdr.h.m + (v.apply().hit ? 8w2 : 8w4);
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
