// Parser errors (P4_16 spec 12.8, 12.10 verify; v1model on BMv2: a parser error does not drop
// the packet: ingress runs with standard_metadata.parser_error set, headers extracted before
// the error stay valid, the header whose extract failed is invalid and the unparsed bytes
// are the payload the deparser appends).
#include <core.p4>
#include <v1model.p4>

error { BadValue }

header h_t { bit<8> kind; bit<8> code; bit<8> x; }
header t_t { bit<16> w; }
struct headers_t { h_t h; t_t t; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        verify(hdr.h.x != 0xEE, error.BadValue);
        transition select(hdr.h.kind) { 1: more; 2: accept; }
    }
    state more { pkt.extract(hdr.t); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.NoError) {
            hdr.h.code = 0x10;
        } else if (sm.parser_error == error.PacketTooShort) {
            hdr.h.code = 0x20;
        } else if (sm.parser_error == error.NoMatch) {
            hdr.h.code = 0x30;
        } else if (sm.parser_error == error.BadValue) {
            hdr.h.code = 0x40;
        } else {
            hdr.h.code = 0xFF;
        }
        if (hdr.t.isValid()) {
            hdr.h.code = hdr.h.code + 1;
            hdr.t.w = hdr.t.w + 1;
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.t); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
