// advance and lookahead in the parser (P4_16 spec 12.8.? packet_in; BMv2 bm_sim/parser.cpp):
// advance skips bits (the skipped bytes are consumed: they are not payload), a run-time amount
// that is not a multiple of 8 is error.ParserInvalidArgument on BMv2, past the end of the
// packet error.PacketTooShort; lookahead in a select key peeks without consuming, and needs the
// bytes to be there (PacketTooShort otherwise). Parser errors reach ingress (v1model on BMv2).
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> kind; bit<8> code; bit<8> n; }
header t_t { bit<8> v; }
struct headers_t { h_t h; t_t t; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.kind) { 1: adv; 2: peek; default: accept; }
    }
    state adv { pkt.advance((bit<32>)hdr.h.n); pkt.extract(hdr.t); transition accept; }
    state peek { transition select(pkt.lookahead<bit<8>>()) { 0xAA: take; default: accept; } }
    state take { pkt.extract(hdr.t); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.NoError) {
            hdr.h.code = 0x10;
        } else if (sm.parser_error == error.PacketTooShort) {
            hdr.h.code = 0x20;
        } else if (sm.parser_error == error.ParserInvalidArgument) {
            hdr.h.code = 0x60;
        } else {
            hdr.h.code = 0xFF;
        }
        if (hdr.t.isValid()) {
            hdr.h.code = hdr.h.code + 1;
            hdr.t.v = hdr.t.v + 1;
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.t); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
