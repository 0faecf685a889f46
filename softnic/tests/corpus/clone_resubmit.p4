/* Packet replication: clone and clone_preserving_field_list (I2E and E2E), resubmit and
 * recirculate preserving @field_list metadata, instance_type constants, multicast. */
#include <core.p4>
#include <v1model.p4>
#include "include/common_headers.p4"

/* Values of standard_metadata.instance_type on BMv2 (simple_switch.md). v1model.p4 does not
 * define them, so programs do, as here. */
const bit<32> BMV2_V1MODEL_INSTANCE_TYPE_NORMAL        = 0;
const bit<32> BMV2_V1MODEL_INSTANCE_TYPE_INGRESS_CLONE = 1;
const bit<32> BMV2_V1MODEL_INSTANCE_TYPE_EGRESS_CLONE  = 2;
const bit<32> BMV2_V1MODEL_INSTANCE_TYPE_RECIRC        = 4;
const bit<32> BMV2_V1MODEL_INSTANCE_TYPE_REPLICATION   = 5;
const bit<32> BMV2_V1MODEL_INSTANCE_TYPE_RESUBMIT      = 6;

const bit<32> I2E_SESSION = 5;
const bit<32> E2E_SESSION = 11;

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
}

struct meta_t {
    @field_list(1)
    bit<8>  resubmit_count;
    @field_list(1, 2)
    bit<8>  recirc_count;
    @field_list(3)
    bit<32> mirror_reason;
}

parser RParser(packet_in pkt,
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

control RIngress(inout headers_t hdr,
                 inout meta_t meta,
                 inout standard_metadata_t standard_metadata) {
    action do_resubmit() {
        meta.resubmit_count = meta.resubmit_count + 1;
        resubmit_preserving_field_list(1);
    }

    action mirror(bit<32> reason) {
        meta.mirror_reason = reason;
        clone_preserving_field_list(CloneType.I2E, I2E_SESSION, 3);
    }

    action plain_clone() {
        clone(CloneType.I2E, I2E_SESSION);
    }

    action multicast(bit<16> grp) {
        standard_metadata.mcast_grp = grp;
    }

    table policy {
        key = {
            hdr.ipv4.dstAddr: lpm;
        }
        actions = {
            do_resubmit;
            mirror;
            plain_clone;
            multicast;
            NoAction;
        }
        default_action = NoAction();
    }

    apply {
        standard_metadata.egress_spec = 1;
        if (standard_metadata.instance_type == BMV2_V1MODEL_INSTANCE_TYPE_RESUBMIT) {
            hdr.ipv4.diffserv = (bit<8>)meta.resubmit_count;
        } else if (hdr.ipv4.isValid()) {
            policy.apply();
        }
    }
}

control REgress(inout headers_t hdr,
                inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    action do_recirculate() {
        meta.recirc_count = meta.recirc_count + 1;
        recirculate_preserving_field_list(2);
    }

    action mirror_out() {
        clone(CloneType.E2E, E2E_SESSION);
    }

    apply {
        if (standard_metadata.instance_type == BMV2_V1MODEL_INSTANCE_TYPE_INGRESS_CLONE) {
            hdr.ethernet.etherType = 0x9000;
        } else if (standard_metadata.instance_type == BMV2_V1MODEL_INSTANCE_TYPE_REPLICATION) {
            hdr.ethernet.srcAddr = (bit<48>)standard_metadata.egress_rid;
        } else if (meta.recirc_count < 2 && hdr.ipv4.isValid() && hdr.ipv4.ttl == 1) {
            do_recirculate();
        } else if (hdr.ethernet.etherType == 0x88B5 &&
                   standard_metadata.instance_type == BMV2_V1MODEL_INSTANCE_TYPE_NORMAL) {
            /* only original packets: cloning the E2E clones too would clone forever */
            mirror_out();
        }
    }
}

control NoCompute(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control RDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(RParser(), NoVerify(), RIngress(), REgress(), NoCompute(), RDeparser()) main;
