// Copy-in/copy-out (P4_16 spec 6.8 "Calling convention"): in/inout arguments are evaluated and
// copied into the callee's parameters when the call starts, out/inout parameters are copied
// back into the arguments when it ends -- for actions, functions and sub-controls alike, also
// when the callee writes the caller's variable directly (the copy-out comes last and wins),
// when the same call runs twice, and when a whole header or struct is passed.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; bit<8> f; bit<8> g; bit<8> k; }
header w_t { bit<8> p; bit<8> q; bit<8> r; }
struct headers_t { h_t h; w_t w; }
struct meta_t { bit<8> unused; }

void inc(inout bit<8> x) { x = x + 1; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); pkt.extract(hdr.w); transition accept; }
}

control Sub(inout bit<8> x, inout w_t ww) {
    apply { x = x + ww.p; ww.q = x; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sub() sub;
    action inc_direct(inout bit<8> x) { x = x + 1; hdr.h.b = 100; }
    action whole_struct(inout headers_t hh) { hh.h.d = 9; hdr.h.d = 50; hdr.h.e = 77; }
    action set_out(out bit<8> y) { y = 7; hdr.h.f = 1; }
    action add3(inout bit<8> x) { x = x + 3; }
    action whole_header(inout w_t ww) { ww.p = ww.p + 1; hdr.w.p = 0xEE; hdr.w.q = 0xDD; }
    action snap(in bit<8> v) { hdr.h.a = 0x33; hdr.w.r = v; }
    apply {
        sm.egress_spec = 1;
        hdr.h.b = 5;
        inc_direct(hdr.h.b);
        hdr.h.c = hdr.h.a;
        inc(hdr.h.c);
        inc(hdr.h.c);
        whole_struct(hdr);
        set_out(hdr.h.f);
        add3(hdr.h.g);
        add3(hdr.h.g);
        whole_header(hdr.w);
        sub.apply(hdr.h.k, hdr.w);
        snap(hdr.h.a);
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.w); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
