// Stacks of header unions (U[3] us): us.next.m extracts, constant-index member access and
// isValid, setValid/setInvalid of a member, push_front/pop_front, emit of the whole struct.
#include <core.p4>
#include <v1model.p4>

header T { bit<8> op; bit<8> flags; }
header A { bit<8> a; }
header B { bit<16> b; }
header_union U { A a; B b; }
struct H { T t; U[3] us; }
struct M { }

parser P(packet_in pk, out H h, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(h.t); transition opt; }
    state opt {
        transition select(pk.lookahead<bit<8>>()) {
            0xA0 &&& 0xF0: pa;
            0xB0 &&& 0xF0: pb;
            default: accept;
        }
    }
    state pa { pk.extract(h.us.next.a); transition opt; }
    state pb { pk.extract(h.us.next.b); transition opt; }
}

control VC(inout H h, inout M m) { apply { } }

control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        bit<8> f = 0;
        if (h.us[0].a.isValid()) { f = f | 0x01; }
        if (h.us[0].b.isValid()) { f = f | 0x02; }
        if (h.us[1].a.isValid()) { f = f | 0x04; }
        if (h.us[1].b.isValid()) { f = f | 0x08; }
        if (h.us[2].a.isValid()) { f = f | 0x10; }
        if (h.us[2].b.isValid()) { f = f | 0x20; }
        h.t.flags = f;
        if (sm.parser_error == error.StackOutOfBounds) { h.t.flags = 0xEE; }
        if (h.t.op == 1) {
            h.us.push_front(1);
            h.us[0].a.setValid();
            h.us[0].a.a = 0xAF;
        } else if (h.t.op == 2) {
            h.us.pop_front(1);
        } else if (h.t.op == 3) {
            h.us[0].b.setValid();
            h.us[0].b.b = 0x1234;
        } else if (h.t.op == 4) {
            h.us.push_front(2);
        } else if (h.t.op == 5) {
            h.us[1].a.setInvalid();
        }
    }
}

control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H h, inout M m) { apply { } }
control D(packet_out pk, in H h) { apply { pk.emit(h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
