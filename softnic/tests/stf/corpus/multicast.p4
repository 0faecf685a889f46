// Multicast (v1model standard_metadata.mcast_grp; BMv2 docs/simple_switch.md: the traffic
// manager makes one copy per (port, rid) of the group, each goes through egress with
// egress_port, egress_rid set and instance_type PKT_INSTANCE_TYPE_REPLICATION = 5).
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> rid; bit<8> port; bit<8> inst; }
struct headers_t { h_t h; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.h.a == 1) {
            sm.mcast_grp = 1;
        } else if (hdr.h.a == 2) {
            sm.mcast_grp = 2;
        } else {
            sm.egress_spec = 1;
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.rid = (bit<8>)sm.egress_rid;
        hdr.h.port = (bit<8>)sm.egress_port;
        hdr.h.inst = (bit<8>)sm.instance_type;
    }
}

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
