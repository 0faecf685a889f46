// Header stack operations at the edges (P4_16 spec 8.18): push_front / pop_front by the
// stack size leave every element invalid; pop_front(2) moves st[2] to st[0];
// an element made valid after holes is still emitted (emit of a stack emits its valid
// elements in index order); hs.size is a compile-time constant.
#include <core.p4>
#include <v1model.p4>

header ctl_t { bit<8> op; bit<8> size; }
header e_t { bit<8> v; bit<8> more; }
struct headers_t { ctl_t ctl; e_t[4] st; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.ctl); transition elems; }
    state elems {
        pkt.extract(hdr.st.next);
        transition select(hdr.st.last.more) { 0: accept; default: elems; }
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.ctl.size = (bit<8>)hdr.st.size;
        if (hdr.ctl.op == 1) {
            hdr.st.push_front(4);
        } else if (hdr.ctl.op == 2) {
            hdr.st.pop_front(4);
        } else if (hdr.ctl.op == 3) {
            hdr.st.pop_front(2);
        } else if (hdr.ctl.op == 4) {
            hdr.st.pop_front(4);
            hdr.st[3].setValid();
            hdr.st[3].v = 0x99;
            hdr.st[3].more = 0;
        }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ctl); pkt.emit(hdr.st); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
