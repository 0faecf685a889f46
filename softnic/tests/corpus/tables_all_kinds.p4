/* Tables: every match kind, key/action annotations, const default_action, size, const entries
 * with masks, ranges, don't-care, tuples and priorities, direct counters and meters,
 * apply().hit / .miss / .action_run. (Action profiles/selectors are declared in v1model.p4 but
 * are outside softnic's subset; their parsing is tested in test_parse.py.) */
#include <core.p4>
#include <v1model.p4>

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

/* the first four bytes of TCP and UDP: the ports */
header l4_ports_t {
    bit<16> srcPort;
    bit<16> dstPort;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    l4_ports_t l4;
}

struct meta_t {
    bit<16> l4_dport;
    bit<8>  color;
    bit<32> nexthop;
    bit<1>  acl_deny;
}

parser TParser(packet_in pkt,
               out headers_t hdr,
               inout meta_t meta,
               inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            6: parse_l4;
            17: parse_l4;
            default: accept;
        }
    }

    state parse_l4 {
        pkt.extract(hdr.l4);
        meta.l4_dport = hdr.l4.dstPort;  /* the acl's range key */
        transition accept;
    }
}

control NoVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control TIngress(inout headers_t hdr,
                 inout meta_t meta,
                 inout standard_metadata_t standard_metadata) {
    direct_counter(CounterType.packets_and_bytes) lpm_counter;
    direct_meter<bit<8>>(MeterType.bytes) acl_meter;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action set_port(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    action set_nexthop(bit<32> nexthop) {
        meta.nexthop = nexthop;
    }

    action counted_nexthop(bit<32> nexthop) {
        lpm_counter.count();
        meta.nexthop = nexthop;
    }

    action deny() {
        meta.acl_deny = 1;
    }

    action permit() {
        meta.acl_deny = 0;
        acl_meter.read(meta.color);
    }

    action rewrite_src(bit<48> smac) {
        hdr.ethernet.srcAddr = smac;
    }

    /* exact match, @name on the key, support_timeout, @tableonly/@defaultonly actions */
    table l2_fwd {
        key = {
            hdr.ethernet.dstAddr: exact @name("dst_mac");
        }
        actions = {
            @tableonly set_port;
            @defaultonly drop;
        }
        const default_action = drop();
        size = 4096;
        support_timeout = true;
    }

    /* longest prefix match with a direct counter */
    table ipv4_lpm {
        key = {
            hdr.ipv4.dstAddr: lpm;
        }
        actions = {
            counted_nexthop;
            NoAction;
        }
        default_action = NoAction();
        counters = lpm_counter;
        size = 1024;
    }

    /* ternary + range keys with constant entries, direct meter */
    table acl {
        key = {
            hdr.ipv4.srcAddr : ternary;
            hdr.ipv4.protocol: ternary;
            meta.l4_dport    : range;
        }
        actions = {
            deny;
            permit;
        }
        default_action = permit();
        meters = acl_meter;
        /* const entries take their priority from their order (p4c refuses `priority =` here) */
        const entries = {
            (32w0x0A000000 &&& 32w0xFF000000, 6, 0 .. 1023): deny();
            (_, 17, 11211 .. 11211): permit();
            (32w0xC0A80001, _, _): permit();
        }
    }

    /* constant entries without priorities: exact keys, a tuple of two */
    table port_map {
        key = {
            standard_metadata.ingress_port: exact;
            hdr.ethernet.etherType        : exact;
        }
        actions = {
            set_port;
            drop;
        }
        default_action = drop();
        const entries = {
            (1, 0x0800): set_port(2);
            (2, 0x0800): set_port(1);
            (3, 0x86dd): drop();
        }
    }

    /* optional match */
    table opt_match {
        key = {
            hdr.ipv4.tos     : optional;
            hdr.ipv4.protocol: exact;
        }
        actions = {
            rewrite_src;
            NoAction;
        }
        default_action = NoAction();
    }

    apply {
        if (hdr.ipv4.isValid()) {
            acl.apply();
            if (meta.acl_deny == 1) {
                drop();
                return;
            }
            switch (ipv4_lpm.apply().action_run) {
                counted_nexthop: {
                    if (!opt_match.apply().hit) {
                        meta.nexthop = 0;
                    }
                }
                default: {
                    port_map.apply();
                }
            }
        } else if (l2_fwd.apply().miss) {
            meta.nexthop = 1;
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

control TDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.l4);
    }
}

V1Switch(TParser(), NoVerify(), TIngress(), NoEgress(), NoCompute(), TDeparser()) main;
