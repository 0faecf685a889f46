// Checksum verification and update (v1model verify_checksum / update_checksum with csum16;
// BMv2 docs/simple_switch.md: a wrong checksum sets standard_metadata.checksum_error = 1 and
// does not drop the packet; update_checksum only writes when its condition is true).
#include <core.p4>
#include <v1model.p4>

header h_t { bit<16> a; bit<16> b; bit<16> ck; bit<16> ck2; bit<8> err; }
struct headers_t { h_t h; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) {
    apply {
        verify_checksum(true, { hdr.h.a, hdr.h.b }, hdr.h.ck, HashAlgorithm.csum16);
    }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.h.err = (bit<8>)sm.checksum_error;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.h.a == 0x1234, { hdr.h.b }, hdr.h.ck2, HashAlgorithm.csum16);
    }
}

control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
