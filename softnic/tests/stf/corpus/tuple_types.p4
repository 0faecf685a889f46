// Tuple types (P4_16 spec 7.2.8 tuple types, 8.11 list expressions, tuple indexing with a
// constant): tuple variables, a tuple assigned from a list built of its own elements, nested
// tuples, a tuple parameter of a function, a tuple as hash data. p4c-bm2-ss compiles them by
// turning each tuple type into a struct (EliminateTuples).
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<16> r; }
struct headers_t { h_t h; }
struct meta_t { bit<8> unused; }

const bit<32> SECOND = 1;

bit<8> sum(in tuple<bit<8>, bit<8>> t) { return t[0] + t[SECOND]; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        tuple<bit<8>, bit<8>> t = {hdr.h.a, hdr.h.b};
        t = {t[1], t[0]};
        hdr.h.a = t[0];
        hdr.h.b = t[1];
        tuple<tuple<bit<8>, bit<8>>, bit<8>> n = {{hdr.h.c, 8w1}, 8w2};
        hdr.h.c = n[0][0] + n[0][1] + n[1];
        hdr.h.d = sum({hdr.h.d, 8w10});
        tuple<bit<8>, bit<8>> k = {hdr.h.a, 8w3};
        hash(hdr.h.r, HashAlgorithm.identity, 16w0, k, 16w0xffff);
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
