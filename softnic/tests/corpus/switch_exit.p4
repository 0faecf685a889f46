/* Control flow: switch on action_run with fall-through and default, exit, return,
 * nested if/else, a sub-control with constructor parameters, block statements. */
#include <core.p4>
#include <v1model.p4>
#include "include/common_headers.p4"

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
}

struct meta_t {
    bit<8> stage;
    bit<8> reason;
}

parser SParser(packet_in pkt,
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
        transition accept;
    }
}

control NoVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

/* A reusable control; its constructor parameter is fixed where it is instantiated. */
control TtlGuard(inout ipv4_t ip, out bit<8> reason)(bit<8> min_ttl) {
    apply {
        reason = 0;
        if (ip.ttl < min_ttl) {
            reason = 1;
            return;
        }
        ip.ttl = ip.ttl - 1;
    }
}

control SIngress(inout headers_t hdr,
                 inout meta_t meta,
                 inout standard_metadata_t standard_metadata) {
    TtlGuard(8w2) guard;

    action to_port(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    action to_cpu() {
        standard_metadata.egress_spec = 9w64;
    }

    action flood() {
        standard_metadata.mcast_grp = 1;
    }

    action drop() {
        mark_to_drop(standard_metadata);
    }

    table classify {
        key = {
            hdr.ethernet.dstAddr: exact;
        }
        actions = {
            to_port;
            to_cpu;
            flood;
            drop;
        }
        default_action = flood();
    }

    apply {
        meta.stage = 0;
        if (!hdr.ethernet.isValid()) {
            drop();
            exit;
        }
        switch (classify.apply().action_run) {
            to_port:
            to_cpu: {
                meta.stage = 1;
            }
            flood: {
                meta.stage = 2;
            }
            default: {
                exit;
            }
        }
        {
            meta.stage = meta.stage + 10;
        }
        if (hdr.ipv4.isValid()) {
            guard.apply(hdr.ipv4, meta.reason);
            if (meta.reason != 0) {
                drop();
                return;
            } else if (meta.stage == 11) {
                meta.stage = 12;
            } else {
                ;
            }
        }
    }
}

control SEgress(inout headers_t hdr,
                inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.egress_port == standard_metadata.ingress_port) {
            mark_to_drop(standard_metadata);
        }
    }
}

control NoCompute(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control SDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(SParser(), NoVerify(), SIngress(), SEgress(), NoCompute(), SDeparser()) main;
