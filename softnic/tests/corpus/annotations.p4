/* Annotations where p4c allows them: declarations, fields, parameters, states, locals,
 * table keys, action references, blocks (@atomic), structured annotations with key=value. */
#include <core.p4>
#include <v1model.p4>
#include "include/common_headers.p4"

@brief("user metadata")
struct meta_t {
    @name("reg_value") bit<32> value;
    bit<32> index;
}

struct headers_t {
    ethernet_t ethernet;
}

@name("MyParser")
parser AParser(packet_in pkt,
               out headers_t hdr,
               inout meta_t meta,
               inout standard_metadata_t standard_metadata) {
    state start {
        transition parse_eth;
    }

    @name("parse_ethernet_state")
    state parse_eth {
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control NoVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

@description("ingress with annotated everything")
control AIngress(inout headers_t hdr,
                 inout meta_t meta,
                 inout standard_metadata_t standard_metadata) {
    @name("ingress.counter_reg") register<bit<32>>(256) counter_reg;
    @hidden bit<32> scratch;

    @name("ingress.fwd")
    action forward(@name("out_port") bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    @noWarn("unused")
    @name("ingress.drop")
    action drop() {
        mark_to_drop(standard_metadata);
    }

    @id(0x02000001)
    @name("ingress.mac_table")
    @softnic_hint[kind="demo", level=3]
    table mac_table {
        key = {
            hdr.ethernet.dstAddr : exact @name("dmac");
            hdr.ethernet.etherType: ternary @name("ethertype") @brief("type");
        }
        actions = {
            @tableonly forward;
            @defaultonly drop;
            @defaultonly NoAction;
        }
        @brief("drop unknown destinations") default_action = drop();
        size = 64;
    }

    apply {
        meta.index = (bit<32>)standard_metadata.ingress_port;
        @atomic {
            counter_reg.read(meta.value, meta.index);
            counter_reg.write(meta.index, meta.value + 1);
        }
        scratch = meta.value;
        mac_table.apply();
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

@deparser
control ADeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
    }
}

V1Switch(AParser(), NoVerify(), AIngress(), NoEgress(), NoCompute(), ADeparser()) main;
