/* Header stacks (.next/.last/.lastIndex, indexing, push/pop), header unions, lookahead. */
#include <core.p4>
#include <v1model.p4>

#define MPLS_DEPTH 4
const int VLAN_DEPTH = 2;

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header vlan_t {
    bit<3>  pcp;
    bit<1>  dei;
    bit<12> vid;
    bit<16> etherType;
}

header mpls_t {
    bit<20> label;
    bit<3>  tc;
    bit<1>  bos;
    bit<8>  ttl;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  tos;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

header ipv6_t {
    bit<4>   version;
    bit<8>   trafficClass;
    bit<20>  flowLabel;
    bit<16>  payloadLen;
    bit<8>   nextHdr;
    bit<8>   hopLimit;
    bit<128> srcAddr;
    bit<128> dstAddr;
}

header_union ip_t {
    ipv4_t v4;
    ipv6_t v6;
}

struct headers_t {
    ethernet_t         ethernet;
    vlan_t[VLAN_DEPTH] vlan;
    mpls_t[MPLS_DEPTH] mpls;
    ip_t               ip;
}

struct meta_t {
    bit<32> last_mpls;
    bit<8>  mpls_count;
}

parser StackParser(packet_in pkt,
                   out headers_t hdr,
                   inout meta_t meta,
                   inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x8100: parse_vlan;
            0x8847: parse_mpls;
            0x0800: parse_ipv4;
            0x86dd: parse_ipv6;
            default: accept;
        }
    }

    state parse_vlan {
        pkt.extract(hdr.vlan.next);
        transition select(hdr.vlan.last.etherType) {
            0x8100: parse_vlan;
            0x8847: parse_mpls;
            0x0800: parse_ipv4;
            default: accept;
        }
    }

    state parse_mpls {
        pkt.extract(hdr.mpls.next);
        meta.last_mpls = hdr.mpls.lastIndex;
        meta.mpls_count = meta.mpls_count + 1;
        transition select(hdr.mpls.last.bos) {
            0: parse_mpls;
            1: parse_mpls_payload;
        }
    }

    state parse_mpls_payload {
        transition select(pkt.lookahead<bit<4>>()) {
            4: parse_ipv4;
            6: parse_ipv6;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ip.v4);
        transition accept;
    }

    state parse_ipv6 {
        pkt.extract(hdr.ip.v6);
        transition accept;
    }
}

control NoVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control StackIngress(inout headers_t hdr,
                     inout meta_t meta,
                     inout standard_metadata_t standard_metadata) {
    action pop_label() {
        hdr.mpls.pop_front(1);
    }

    action push_label(bit<20> label) {
        hdr.mpls.push_front(1);
        hdr.mpls[0].setValid();
        hdr.mpls[0].label = label;
        hdr.mpls[0].tc = 0;
        hdr.mpls[0].bos = 0;
        hdr.mpls[0].ttl = 64;
    }

    table mpls_fib {
        key = {
            hdr.mpls[0].label: exact;
        }
        actions = {
            pop_label;
            push_label;
            NoAction;
        }
        default_action = NoAction();
    }

    apply {
        standard_metadata.egress_spec = 1;
        if (hdr.mpls[0].isValid()) {
            mpls_fib.apply();
            hdr.mpls[0].ttl = hdr.mpls[0].ttl - 1;
        }
        if (hdr.vlan[1].isValid()) {
            hdr.vlan[0].vid = hdr.vlan[1].vid;
            hdr.vlan[1].setInvalid();
        }
        if (hdr.ip.v4.isValid()) {
            hdr.ip.v4.ttl = hdr.ip.v4.ttl - 1;
        } else if (hdr.ip.v6.isValid()) {
            hdr.ip.v6.hopLimit = hdr.ip.v6.hopLimit - 1;
        }
    }
}

control NoEgress(inout headers_t hdr,
                 inout meta_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control NoCompute(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control StackDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.vlan);
        pkt.emit(hdr.mpls);
        pkt.emit(hdr.ip);
    }
}

V1Switch(StackParser(), NoVerify(), StackIngress(), NoEgress(), NoCompute(), StackDeparser()) main;
