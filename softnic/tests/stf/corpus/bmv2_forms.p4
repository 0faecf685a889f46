// Constructs whose BMv2 JSON softnic used to write in forms BMv2 1.15 refuses or runs
// differently (issue 9 item 3): a run-time stack index as an lvalue and inside a field access,
// lookahead inside an expression and into a header (parser), and exit in an action a table runs
// with statements after it. Packets from the P4_16 spec (12.5 exit, 12.8.3 lookahead, 8.18 stack
// indices) and BMv2's documented behaviour.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> idx; bit<8> b; bit<8> c; bit<8> d; bit<8> e; }
header e_t { bit<8> v; }
header p_t { bit<4> hi; bit<4> lo; }
struct headers_t { h_t h; p_t peek; e_t[2] s; }
struct meta_t { bit<8> low; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        meta.low = pkt.lookahead<bit<8>>() & 8w0x0F;
        pkt.extract(hdr.h);
        hdr.peek = pkt.lookahead<p_t>();
        transition select(pkt.lookahead<bit<8>>() >> 4) { 8w0xF: accept; default: stack; }
    }
    state stack { pkt.extract(hdr.s.next); pkt.extract(hdr.s.next); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action f() { hdr.h.d = 0x11; exit; hdr.h.d = 0x12; }
    action g() { hdr.h.d = 0x22; }
    table t { key = { hdr.h.idx : exact; } actions = { f; g; } default_action = g(); }
    apply {
        sm.egress_spec = 1;
        hdr.s[hdr.h.idx].v = hdr.h.b;
        hdr.h.c = hdr.s[hdr.h.idx ^ 1].v + meta.low;
        t.apply();
        hdr.h.e = 0x99;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { hdr.h.b = hdr.h.b | 0x80; }
}
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); pkt.emit(hdr.peek); pkt.emit(hdr.s); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
