// Header stacks (P4_16 spec 8.18): .next / .last / .lastIndex in the parser, error
// StackOutOfBounds when .next is extracted into a full stack (ingress still runs on BMv2 with
// standard_metadata.parser_error set), run-time indices computed by expressions with side
// effects, push_front / pop_front, and emit of a stack (its valid elements in index order).
#include <core.p4>
#include <v1model.p4>

header ctl_t {
    bit<8> op; bit<8> idx; bit<8> lastv; bit<8> lastidx;
    bit<8> err; bit<8> k; bit<8> o1; bit<8> o2;
}
header e_t { bit<8> v; bit<8> more; }
struct headers_t { ctl_t ctl; e_t[4] st; }
struct meta_t { bit<8> unused; }

bit<8> bumpi(inout bit<8> x) { x = x + 1; return x; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.ctl); transition elems; }
    state elems {
        pkt.extract(hdr.st.next);
        transition select(hdr.st.last.more) { 0: done; default: elems; }
    }
    state done {
        hdr.ctl.lastv = hdr.st.last.v;
        hdr.ctl.lastidx = (bit<8>)hdr.st.lastIndex;
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.StackOutOfBounds) {
            hdr.ctl.err = 3;
        } else if (sm.parser_error == error.NoError) {
            hdr.ctl.err = 0;
        } else {
            hdr.ctl.err = 0xEE;
        }
        hdr.ctl.k = hdr.ctl.idx;
        hdr.ctl.o1 = hdr.st[bumpi(hdr.ctl.k)].v + hdr.ctl.k;
        hdr.st[hdr.ctl.idx].v = 0x77;
        if (hdr.ctl.op == 1) {
            hdr.st.push_front(1);
            hdr.st[0].setValid();
            hdr.st[0].v = 0xAA;
            hdr.st[0].more = 1;
        } else if (hdr.ctl.op == 2) {
            hdr.st.pop_front(1);
        } else if (hdr.ctl.op == 3) {
            hdr.st.push_front(2);
        }
        hdr.ctl.o2 = 0;
        if (hdr.st[0].isValid()) { hdr.ctl.o2 = hdr.ctl.o2 | 1; }
        if (hdr.st[1].isValid()) { hdr.ctl.o2 = hdr.ctl.o2 | 2; }
        if (hdr.st[2].isValid()) { hdr.ctl.o2 = hdr.ctl.o2 | 4; }
        if (hdr.st[3].isValid()) { hdr.ctl.o2 = hdr.ctl.o2 | 8; }
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ctl); pkt.emit(hdr.st); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
