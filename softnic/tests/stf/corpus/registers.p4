// Registers keep state across packets (v1model register; BMv2: cells start at 0, read and
// write act at once, in program order): each packet reads cell idx, reports the old value and
// stores old + inc (bit<8>, wrapping).
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> idx; bit<8> inc; bit<8> old; }
struct headers_t { h_t h; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<8>>(4) r;
    action bump() {
        bit<8> v;
        r.read(v, (bit<32>)hdr.h.idx);
        hdr.h.old = v;
        r.write((bit<32>)hdr.h.idx, v + hdr.h.inc);
    }
    table t { key = { hdr.h.idx : exact; } actions = { bump; } default_action = bump(); }
    apply {
        sm.egress_spec = 1;
        t.apply();
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
