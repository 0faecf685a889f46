// standard_metadata on BMv2 (v1model.p4's comments, BMv2 docs/simple_switch.md):
// ingress_port and packet_length (the received size) in ingress; mark_to_drop sets
// egress_spec to the drop port 511, so a later assignment of egress_spec still forwards;
// egress_spec 511 drops; egress_port in egress is the port chosen in ingress; mark_to_drop in
// egress drops.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> op; bit<8> inport; bit<16> plen; bit<8> eport; }
struct headers_t { h_t h; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.inport = (bit<8>)sm.ingress_port;
        hdr.h.plen = (bit<16>)sm.packet_length;
        if (hdr.h.op == 1) {
            mark_to_drop(sm);
            sm.egress_spec = 2;
        } else if (hdr.h.op == 2) {
            sm.egress_spec = 3;
            mark_to_drop(sm);
        } else if (hdr.h.op == 3) {
            sm.egress_spec = 511;
        } else {
            sm.egress_spec = 1;
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.eport = (bit<8>)sm.egress_port;
        if (hdr.h.op == 5) { mark_to_drop(sm); }
    }
}

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
