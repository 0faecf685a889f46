/* Parser features: select on several fields, masks (&&&), ranges (..), default, don't-care,
 * tuples, lookahead, verify, parser-local constants/variables, custom errors,
 * serializable enums, explicit transition reject. */
#include <core.p4>
#include <v1model.p4>

error {
    BadIhl,
    UnknownProto
}

enum bit<8> IpProto {
    ICMP = 1,
    TCP  = 6,
    UDP  = 17
}

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
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

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> length;
    bit<16> checksum;
}

header tcp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<32> seqNo;
    bit<32> ackNo;
    bit<4>  dataOffset;
    bit<4>  res;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgentPtr;
}

header payload_word_t {
    bit<32> word;
}

struct headers_t {
    ethernet_t     ethernet;
    ipv4_t         ipv4;
    udp_t          udp;
    tcp_t          tcp;
    payload_word_t word;
}

struct meta_t {
    bit<8>  l4_kind;
    bit<16> peek;
}

parser SelectParser(packet_in pkt,
                    out headers_t hdr,
                    inout meta_t meta,
                    inout standard_metadata_t standard_metadata) {
    const bit<16> ETH_IPV4 = 16w0x0800;
    bit<16> tmp;

    state start {
        pkt.extract(hdr.ethernet);
        tmp = hdr.ethernet.etherType;
        transition select(tmp) {
            ETH_IPV4: parse_ipv4;
            0x8000 &&& 0xF000: reject;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        verify(hdr.ipv4.ihl >= 5, error.BadIhl);
        transition select(hdr.ipv4.fragOffset, hdr.ipv4.protocol) {
            (0, (bit<8>)IpProto.UDP): parse_udp;
            (0, (bit<8>)IpProto.TCP): parse_tcp;
            (_, 1): accept;
            (13w1 .. 13w0x1FFF, _): accept;
            default: unknown;
        }
    }

    state unknown {
        verify(false, error.UnknownProto);
        transition accept;
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        meta.l4_kind = 1;
        transition select(hdr.udp.dstPort) {
            0 .. 1023: well_known;
            11211: peek_payload;
            default: accept;
        }
    }

    state well_known {
        meta.l4_kind = 2;
        transition accept;
    }

    state peek_payload {
        meta.peek = pkt.lookahead<bit<16>>();
        transition select(pkt.lookahead<bit<32>>()) {
            0x67657420: parse_word;   // "get "
            0x00000000 &&& 0xFF000000: accept;
            _: accept;
        }
    }

    state parse_word {
        pkt.extract(hdr.word);
        transition accept;
    }

    state parse_tcp {
        pkt.extract(hdr.tcp);
        meta.l4_kind = 3;
        transition select(hdr.tcp.flags) {
            0x12 &&& 0x12: accept;
            0x02 &&& 0x02: accept;
            default: accept;
        }
    }
}

control NoVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control SelectIngress(inout headers_t hdr,
                      inout meta_t meta,
                      inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.parser_error == error.BadIhl) {
            mark_to_drop(standard_metadata);
        } else if (standard_metadata.parser_error != error.NoError) {
            mark_to_drop(standard_metadata);
        } else {
            standard_metadata.egress_spec = (bit<9>)meta.l4_kind;
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

control SelectDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr);
    }
}

V1Switch(SelectParser(), NoVerify(), SelectIngress(), NoEgress(), NoCompute(), SelectDeparser()) main;
