// A generic control (P4_16 spec 14 control declarations take type parameters) instantiated
// with explicit type arguments: Swap<bit<8>> on two fields and Swap<x_t> on two headers; a
// header initialized from a list expression is valid (spec 8.13? "header initializers").
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; }
header x_t { bit<8> u; bit<8> v; }
struct headers_t { h_t h; x_t x; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); pkt.extract(hdr.x); transition accept; }
}

control Swap<T>(inout T l, inout T r) {
    apply { T t = l; l = r; r = t; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Swap<bit<8>>() sw8;
    Swap<x_t>() swx;
    apply {
        sm.egress_spec = 1;
        sw8.apply(hdr.h.a, hdr.h.b);
        x_t tmp = { 0x11, 0x22 };
        swx.apply(hdr.x, tmp);
        hdr.x.v = hdr.x.v + tmp.u;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.x); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
