// A control instance passed by name as a constructor argument (P4_16 spec 11.3: an instance
// passed to a constructor is that instance, not a copy; p4c's issue1566-bmv2): Twice(inc)
// applies inc itself, so the register inside inc is one, counting the direct apply and both
// applications through Twice; Once(sub) applies sub, whose table keeps the control-plane name
// of sub (Ing.sub.t).
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; }
struct headers_t { h_t h; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}

control Inc(inout bit<8> x) {
    register<bit<8>>(1) r;
    apply {
        bit<8> v;
        r.read(v, 0);
        v = v + 1;
        r.write(0, v);
        x = v;
    }
}

control Twice(inout bit<8> y)(Inc c) {
    apply { c.apply(y); c.apply(y); }
}

control Sub(inout bit<8> x) {
    action set(bit<8> v) { x = v; }
    // the key's name given explicitly: the control plane sees "x" however x is bound
    table t {
        key = { x: exact @name("x"); }
        actions = { set; NoAction; }
        default_action = NoAction();
    }
    apply { t.apply(); }
}

control Once(inout bit<8> y)(Sub s) {
    apply { y = y + 1; s.apply(y); }
}

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Inc() inc;
    Twice(inc) tw;
    Sub() sub;
    Once(sub) once;
    apply {
        inc.apply(hdr.h.a);
        tw.apply(hdr.h.b);
        once.apply(hdr.h.c);
        sm.egress_spec = 1;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
