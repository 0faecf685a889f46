/* A controller-filled flow cache in the style of the p4lang/tutorials "flowcache" exercise.
 *
 * IPv4 packets are looked up by (protocol, source, destination) in flow_cache. A miss runs
 * punt_unknown: a copy of the packet goes to the CPU port through clone session 57, with the
 * ingress port and the reason in metadata fields preserved by @field_list(FL_PUNT); the
 * original is dropped. The egress prepends the packet_in controller header to that copy. The
 * controller then installs a hit entry (use_cached: output port, optional TTL decrement,
 * new DSCP, next-hop MAC), and in the meantime sends the packet back as a packet-out whose
 * controller header says which port to use. A packet-out with an opcode this program does
 * not know is punted back to the controller.
 *
 * Constructs the exercise relies on: serializable enums in headers and metadata, a switch on
 * an enum value, @field_list with a named constant, clone_preserving_field_list, a direct call
 * of an action with a run-time argument, an action calling actions, ?: and |-| in an action,
 * an assignment to a slice, support_timeout, counters indexed by a slice of a header field.
 */
#include <core.p4>
#include <v1model.p4>

#define CPU_PORT 510

const bit<16> ETH_IPV4 = 0x0800;
const int PUNT_SESSION = 57;
const int FL_PUNT = 1;
const bit<32> N_HOSTS = 4;

typedef bit<9>  port_t;
typedef bit<48> mac_t;
typedef bit<32> addr_t;

enum bit<8> Opcode_t {
    NOP = 0,
    OUT_TO_PORT = 1
}

enum bit<8> Reason_t {
    UNKNOWN_FLOW = 1,
    BAD_OPCODE = 2
}

@controller_header("packet_out")
header to_switch_h {
    Opcode_t opcode;
    bit<8>   pad;
    bit<32>  port;
}

@controller_header("packet_in")
header to_cpu_h {
    bit<16>  in_port;
    Reason_t reason;
    Opcode_t opcode;
}

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

struct fc_meta_t {
    @field_list(FL_PUNT) port_t   in_port;
    @field_list(FL_PUNT) Reason_t reason;
    @field_list(FL_PUNT) Opcode_t opcode;
}

struct fc_headers_t {
    to_cpu_h    to_cpu;
    to_switch_h to_switch;
    eth_h       eth;
    ip4_h       ip;
}

parser FcParser(packet_in pkt, out fc_headers_t hdr, inout fc_meta_t meta,
                inout standard_metadata_t std) {
    state start {
        transition select(std.ingress_port) {
            CPU_PORT: from_cpu;
            default: eth;
        }
    }
    state from_cpu {
        pkt.extract(hdr.to_switch);
        transition accept;
    }
    state eth {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ethType) {
            ETH_IPV4: ip;
            default: accept;
        }
    }
    state ip {
        pkt.extract(hdr.ip);
        transition accept;
    }
}

control FcVerify(inout fc_headers_t hdr, inout fc_meta_t meta) {
    apply {
        verify_checksum(hdr.ip.isValid() && hdr.ip.ihl == 5,
            { hdr.ip.ver, hdr.ip.ihl, hdr.ip.tos, hdr.ip.len, hdr.ip.ident, hdr.ip.flags,
              hdr.ip.frag, hdr.ip.ttl, hdr.ip.proto, hdr.ip.src, hdr.ip.dst },
            hdr.ip.csum, HashAlgorithm.csum16);
    }
}

control FcIngress(inout fc_headers_t hdr, inout fc_meta_t meta,
                  inout standard_metadata_t std) {
    counter(N_HOSTS, CounterType.packets_and_bytes) from_cpu_count;

    action to_cpu(Reason_t reason, Opcode_t opcode) {
        std.egress_spec = CPU_PORT;
        meta.in_port = std.ingress_port;
        meta.reason = reason;
        meta.opcode = opcode;
    }

    action copy_to_cpu(Reason_t reason, Opcode_t opcode) {
        clone_preserving_field_list(CloneType.I2E, PUNT_SESSION, FL_PUNT);
        meta.in_port = std.ingress_port;
        meta.reason = reason;
        meta.opcode = opcode;
    }

    action discard() {
        mark_to_drop(std);
    }

    action use_cached(port_t port, bit<1> dec_ttl, bit<6> dscp, mac_t next_hop) {
        std.egress_spec = port;
        hdr.ip.ttl = (dec_ttl == 1) ? (hdr.ip.ttl |-| 1) : hdr.ip.ttl;
        hdr.ip.tos[7:2] = dscp;
        hdr.eth.dst = next_hop;
    }

    action punt_unknown() {
        copy_to_cpu(Reason_t.UNKNOWN_FLOW, Opcode_t.NOP);
        discard();
    }

    table flow_cache {
        key = {
            hdr.ip.proto : exact;
            hdr.ip.src   : exact;
            hdr.ip.dst   : exact;
        }
        actions = { use_cached; discard; punt_unknown; }
        support_timeout = true;
        default_action = punt_unknown();
        size = 1024;
    }

    apply {
        if (hdr.to_switch.isValid()) {
            from_cpu_count.count((bit<32>)hdr.to_switch.port[1:0]);
            switch (hdr.to_switch.opcode) {
                Opcode_t.OUT_TO_PORT: {
                    std.egress_spec = (port_t)hdr.to_switch.port;
                    hdr.to_switch.setInvalid();
                }
                default: {
                    to_cpu(Reason_t.BAD_OPCODE, hdr.to_switch.opcode);
                    hdr.to_switch.setInvalid();
                }
            }
        } else if (hdr.ip.isValid()) {
            flow_cache.apply();
        } else {
            discard();
        }
    }
}

control FcEgress(inout fc_headers_t hdr, inout fc_meta_t meta,
                 inout standard_metadata_t std) {
    counter(N_HOSTS, CounterType.packets_and_bytes) to_cpu_count;

    action add_to_cpu_header(Reason_t reason, port_t in_port) {
        hdr.to_cpu.setValid();
        hdr.to_cpu.in_port = (bit<16>)in_port;
        hdr.to_cpu.reason = reason;
        hdr.to_cpu.opcode = Opcode_t.NOP;
        to_cpu_count.count((bit<32>)hdr.ip.dst[1:0]);
    }

    apply {
        if (std.egress_port == CPU_PORT) {
            add_to_cpu_header(meta.reason, meta.in_port);
        }
    }
}

control FcChecksum(inout fc_headers_t hdr, inout fc_meta_t meta) {
    apply {
        update_checksum(hdr.ip.isValid(),
            { hdr.ip.ver, hdr.ip.ihl, hdr.ip.tos, hdr.ip.len, hdr.ip.ident, hdr.ip.flags,
              hdr.ip.frag, hdr.ip.ttl, hdr.ip.proto, hdr.ip.src, hdr.ip.dst },
            hdr.ip.csum, HashAlgorithm.csum16);
    }
}

control FcDeparser(packet_out pkt, in fc_headers_t hdr) {
    apply {
        pkt.emit(hdr.to_cpu);
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ip);
    }
}

V1Switch(FcParser(), FcVerify(), FcIngress(), FcEgress(), FcChecksum(), FcDeparser()) main;
