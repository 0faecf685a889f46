// Match kinds and entry priorities (P4_16 spec 13.2.1 match kinds; P4Runtime / STF: among
// matching ternary or range entries the larger priority wins; lpm: the longest prefix wins;
// const entries: the earlier entry wins).
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> m; bit<8> l; bit<8> r; bit<8> c; }
struct headers_t { h_t h; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action mark(bit<8> v) { hdr.h.m = v; }
    action markl(bit<8> v) { hdr.h.l = v; }
    action markr(bit<8> v) { hdr.h.r = v; }
    action markc(bit<8> v) { hdr.h.c = v; }
    table acl {
        key = { hdr.h.a : ternary; hdr.h.b : ternary; }
        actions = { mark; }
        default_action = mark(0xEE);
    }
    table lp { key = { hdr.h.a : lpm; } actions = { markl; } default_action = markl(0xEE); }
    table rg { key = { hdr.h.b : range; } actions = { markr; } default_action = markr(0xEE); }
    table ct {
        key = { hdr.h.a : ternary; }
        actions = { markc; }
        const entries = {
            0x10 &&& 0xF0 : markc(1);
            0x12 : markc(2);
            _ : markc(3);
        }
    }
    apply {
        sm.egress_spec = 1;
        acl.apply();
        lp.apply();
        rg.apply();
        ct.apply();
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
