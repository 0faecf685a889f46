// Clone / mirror sessions (v1model clone(), BMv2 simple_switch.md): an ingress-to-egress clone
// is the packet as received, parsed again, sent to the session's port with instance_type 1
// (ingress modifications not included); an egress-to-egress clone copies the headers egress
// left, runs egress again with instance_type 2; the original continues unchanged.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> e; bit<8> f; }
struct headers_t { h_t h; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.h.b = 0x11;
        if (hdr.h.a == 1) { clone(CloneType.I2E, 32w5); }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 0) {
            hdr.h.e = 0xE0;
            if (hdr.h.a == 2) { clone(CloneType.E2E, 32w6); }
        } else if (sm.instance_type == 1) {
            hdr.h.e = 0xE1;
        } else if (sm.instance_type == 2) {
            hdr.h.f = 0xE2;
        }
    }
}

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
