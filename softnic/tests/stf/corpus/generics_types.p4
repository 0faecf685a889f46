// Explicit type arguments and generic / nested blocks (P4_16 spec 7.? generics, 15 parsers
// and 14 controls instantiated inside others, control-typed constructor parameters):
// V1Switch<H, M>(...), a generic sub-parser GP<H> instantiated with a type argument, a
// sub-control with a constructor parameter instantiated twice with different values, and a
// control passed as a constructor argument of another. (Generic controls: generic_control.p4.)
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
header x_t { bit<8> u; bit<8> v; }
struct headers_t { h_t h; x_t x; }
struct meta_t { bit<8> unused; }

parser GP<H>(packet_in pkt, out H hh) {
    state start { pkt.extract(hh); transition accept; }
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    GP<x_t>() gp;
    state start {
        pkt.extract(hdr.h);
        gp.apply(pkt, hdr.x);
        transition accept;
    }
}

control AddK(inout bit<8> x)(bit<8> k) {
    apply { x = x + k; }
}

control Adder(inout bit<8> x);

control Outer(inout bit<8> x)(Adder ad) {
    apply { ad.apply(x); x = x ^ 0xF0; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    AddK(8w3) add3;
    AddK(8w10) add10;
    Outer(AddK(8w5)) outer;
    apply {
        sm.egress_spec = 1;
        add3.apply(hdr.h.c);
        add10.apply(hdr.h.c);
        outer.apply(hdr.h.d);
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.x); } }

V1Switch<headers_t, meta_t>(P(), VC(), I(), E(), CC(), D()) main;
