// Resubmit and recirculate (v1model *_preserving_field_list; BMv2 docs/simple_switch.md and
// simple_switch.cpp): a resubmitted packet is the packet as received (ingress changes are
// dropped) and a recirculated one is the packet as deparsed after egress; both start ingress
// again with metadata reset except the fields of the preserved @field_list, with
// instance_type 6 (resubmit) / 4 (recirculate), and the original is not sent out.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; }
struct headers_t { h_t h; }
struct meta_t {
    @field_list(1) bit<8> rs;
    @field_list(2) bit<8> rc;
    bit<8> lost;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.instance_type == 0) {
            hdr.h.b = 0xAA;
            meta.rs = 7;
            meta.lost = 9;
            if (hdr.h.a == 1) { resubmit_preserving_field_list(1); }
        } else if (sm.instance_type == 6) {
            hdr.h.c = meta.rs;
            hdr.h.d = meta.lost;
        } else if (sm.instance_type == 4) {
            hdr.h.e = meta.rc;
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 0 && hdr.h.a == 2) {
            meta.rc = 5;
            hdr.h.b = 0xBB;
            recirculate_preserving_field_list(2);
        }
    }
}

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
