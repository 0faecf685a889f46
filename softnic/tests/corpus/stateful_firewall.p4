/* A stateful TCP firewall in the style of the p4lang/tutorials "firewall" exercise.
 *
 * Ports are classified by the control plane (table port_dir): a packet going from an inside
 * port to an outside port has direction OUTBOUND, the reverse INBOUND. An outbound SYN opens
 * the flow: its 5-tuple is hashed twice (crc16, crc32) into a two-register Bloom filter. An
 * inbound TCP packet passes only if both filter bits of its flow are set; the inbound packet
 * hashes the tuple with the addresses and ports swapped, so a reply finds the bits its
 * outbound SYN set. Everything else is plain IPv4 LPM forwarding.
 *
 * Constructs the exercise relies on: a direct call of an action with run-time arguments,
 * a table's .hit in a condition, hash() over a list expression, register read/write,
 * update_checksum.
 */
#include <core.p4>
#include <v1model.p4>

const bit<16> ETH_IPV4 = 0x0800;
const bit<8>  PROTO_TCP = 6;
const bit<32> FILTER_SLOTS = 4096;

const bit<1> OUTBOUND = 0;
const bit<1> INBOUND = 1;

typedef bit<48> mac_t;
typedef bit<32> addr_t;
typedef bit<9>  port_t;

header eth_h {
    mac_t   dst;
    mac_t   src;
    bit<16> ethType;
}

header ip4_h {
    bit<4>  ver;
    bit<4>  ihl;
    bit<8>  tos;
    bit<16> len;
    bit<16> ident;
    bit<3>  flags;
    bit<13> frag;
    bit<8>  ttl;
    bit<8>  proto;
    bit<16> csum;
    addr_t  src;
    addr_t  dst;
}

header tcp_h {
    bit<16> sport;
    bit<16> dport;
    bit<32> seq;
    bit<32> ack;
    bit<4>  off;
    bit<4>  rsvd;
    bit<1>  cwr;
    bit<1>  ece;
    bit<1>  urg;
    bit<1>  fack;
    bit<1>  psh;
    bit<1>  rst;
    bit<1>  syn;
    bit<1>  fin;
    bit<16> win;
    bit<16> csum;
    bit<16> urgp;
}

struct fw_headers_t {
    eth_h eth;
    ip4_h ip;
    tcp_h tcp;
}

struct fw_meta_t { }

parser FwParser(packet_in pkt, out fw_headers_t hdr, inout fw_meta_t meta,
                inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ethType) {
            ETH_IPV4: ip;
            default: accept;
        }
    }
    state ip {
        pkt.extract(hdr.ip);
        transition select(hdr.ip.proto) {
            PROTO_TCP: tcp;
            default: accept;
        }
    }
    state tcp {
        pkt.extract(hdr.tcp);
        transition accept;
    }
}

control FwVerify(inout fw_headers_t hdr, inout fw_meta_t meta) { apply { } }

control FwIngress(inout fw_headers_t hdr, inout fw_meta_t meta,
                  inout standard_metadata_t std) {
    register<bit<1>>(FILTER_SLOTS) filter_a;
    register<bit<1>>(FILTER_SLOTS) filter_b;
    bit<32> slot_a;
    bit<32> slot_b;
    bit<1> dir;

    action block() {
        mark_to_drop(std);
    }

    // Both filter positions of the flow (near address/port first).
    action flow_slots(addr_t near, addr_t far, bit<16> near_port, bit<16> far_port) {
        hash(slot_a, HashAlgorithm.crc16, 32w0,
             {near, far, near_port, far_port, hdr.ip.proto}, FILTER_SLOTS);
        hash(slot_b, HashAlgorithm.crc32, 32w0,
             {near, far, near_port, far_port, hdr.ip.proto}, FILTER_SLOTS);
    }

    action route(mac_t next_hop, port_t port) {
        std.egress_spec = port;
        hdr.eth.src = hdr.eth.dst;
        hdr.eth.dst = next_hop;
        hdr.ip.ttl = hdr.ip.ttl - 1;
    }

    table routes {
        key = { hdr.ip.dst : lpm; }
        actions = { route; block; NoAction; }
        size = 256;
        default_action = block();
    }

    action set_dir(bit<1> d) {
        dir = d;
    }

    table port_dir {
        key = {
            std.ingress_port : exact;
            std.egress_spec  : exact;
        }
        actions = { set_dir; NoAction; }
        size = 64;
        default_action = NoAction();
    }

    apply {
        if (!hdr.ip.isValid()) {
            return;
        }
        routes.apply();
        if (!hdr.tcp.isValid()) {
            return;
        }
        dir = OUTBOUND;
        if (port_dir.apply().hit) {
            if (dir == OUTBOUND) {
                flow_slots(hdr.ip.src, hdr.ip.dst, hdr.tcp.sport, hdr.tcp.dport);
                if (hdr.tcp.syn == 1) {
                    filter_a.write(slot_a, 1);
                    filter_b.write(slot_b, 1);
                }
            } else {
                flow_slots(hdr.ip.dst, hdr.ip.src, hdr.tcp.dport, hdr.tcp.sport);
                bit<1> seen_a;
                bit<1> seen_b;
                filter_a.read(seen_a, slot_a);
                filter_b.read(seen_b, slot_b);
                if (seen_a == 0 || seen_b == 0) {
                    block();
                }
            }
        }
    }
}

control FwEgress(inout fw_headers_t hdr, inout fw_meta_t meta,
                 inout standard_metadata_t std) { apply { } }

control FwChecksum(inout fw_headers_t hdr, inout fw_meta_t meta) {
    apply {
        update_checksum(hdr.ip.isValid(),
            { hdr.ip.ver, hdr.ip.ihl, hdr.ip.tos, hdr.ip.len, hdr.ip.ident, hdr.ip.flags,
              hdr.ip.frag, hdr.ip.ttl, hdr.ip.proto, hdr.ip.src, hdr.ip.dst },
            hdr.ip.csum, HashAlgorithm.csum16);
    }
}

control FwDeparser(packet_out pkt, in fw_headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ip);
        pkt.emit(hdr.tcp);
    }
}

V1Switch(FwParser(), FwVerify(), FwIngress(), FwEgress(), FwChecksum(), FwDeparser()) main;
