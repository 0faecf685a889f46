// Values wider than 64 bits (P4_16 spec 8.6: bit<W> arithmetic is modulo 2^W for any W):
// 128-bit add with a carry across 64 bits, shifts by more than 64, slices of the two halves,
// an unsigned comparison on the top bit, a 48-bit wrap-around, an lpm table on a 128-bit key.
#include <core.p4>
#include <v1model.p4>

header w_t {
    bit<128> a; bit<128> r1; bit<128> r2; bit<64> hi; bit<8> gt; bit<48> mac; bit<8> p;
}
struct headers_t { w_t w; }
struct meta_t { bit<8> unused; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.w); transition accept; }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action setp(bit<8> p) { hdr.w.p = p; }
    table v6 { key = { hdr.w.a : lpm; } actions = { setp; } default_action = setp(0xEE); }
    apply {
        sm.egress_spec = 1;
        hdr.w.r1 = hdr.w.a + 1;
        hdr.w.r2 = (hdr.w.a << 65) | (hdr.w.a >> 100);
        hdr.w.hi = hdr.w.a[127:64] ^ hdr.w.a[63:0];
        hdr.w.gt = 0;
        if (hdr.w.a > 128w0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF) { hdr.w.gt = 1; }
        hdr.w.mac = hdr.w.mac - 1;
        v6.apply();
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.w); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
