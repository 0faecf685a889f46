// Variable-length headers (P4_16 spec 7.1.6 varbit, 12.8.? two-argument extract; BMv2
// bm_sim/parser.cpp extract_VL): the length in bits must be a multiple of 8
// (ParserInvalidArgument), the bytes must be in the packet (PacketTooShort), and the header
// must not exceed its maximum size (HeaderTooShort) -- checked in that order. Emit writes
// the varbit field with the length it was extracted with.
#include <core.p4>
#include <v1model.p4>

header l_t { bit<8> len; bit<8> code; }
header opt_t { bit<8> kind; varbit<24> data; }
header tail_t { bit<8> v; }
struct headers_t { l_t l; opt_t opt; tail_t tail; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.l);
        pkt.extract(hdr.opt, (bit<32>)hdr.l.len);
        pkt.extract(hdr.tail);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.NoError) {
            hdr.l.code = 0x10;
        } else if (sm.parser_error == error.PacketTooShort) {
            hdr.l.code = 0x20;
        } else if (sm.parser_error == error.HeaderTooShort) {
            hdr.l.code = 0x50;
        } else if (sm.parser_error == error.ParserInvalidArgument) {
            hdr.l.code = 0x60;
        } else {
            hdr.l.code = 0xFF;
        }
        if (hdr.opt.isValid()) { hdr.l.code = hdr.l.code + 1; }
        if (hdr.tail.isValid()) {
            hdr.l.code = hdr.l.code + 2;
            hdr.tail.v = hdr.tail.v + 1;
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.l); pkt.emit(hdr.opt); pkt.emit(hdr.tail); }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
