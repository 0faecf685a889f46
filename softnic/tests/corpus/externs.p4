/* v1model externs: register, counter, meter, hash, random, truncate, assert/assume, log_msg,
 * mark_to_drop; extern method calls with explicit type arguments. */
#include <core.p4>
#include <v1model.p4>
#include "include/common_headers.p4"

const bit<32> NUM_SLOTS = 1024;

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
}

struct meta_t {
    bit<32> slot;
    bit<32> hits;
    bit<16> flow_hash;
    bit<8>  rnd;
    bit<2>  color;
}

parser XParser(packet_in pkt,
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

control XIngress(inout headers_t hdr,
                 inout meta_t meta,
                 inout standard_metadata_t standard_metadata) {
    register<bit<32>>(NUM_SLOTS) hit_count;
    register<bit<64>>(32w16) wide_reg;
    counter(512, CounterType.packets) port_packets;
    counter(32w512, CounterType.bytes) port_bytes;
    meter(64, MeterType.packets) port_meter;

    action compute_slot() {
        hash(meta.flow_hash,
             HashAlgorithm.crc16,
             16w0,
             { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.protocol },
             32w65536);
        hash<bit<32>, bit<32>, tuple<bit<32>, bit<32>>, bit<32>>(
            meta.slot, HashAlgorithm.crc32, 0, { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr }, NUM_SLOTS);
    }

    action count_hit() {
        hit_count.read(meta.hits, meta.slot);
        hit_count.write(meta.slot, meta.hits + 1);
        wide_reg.write(meta.slot[3:0] ++ 28w0, (bit<64>)meta.hits);
    }

    action police() {
        port_meter.execute_meter<bit<2>>((bit<32>)standard_metadata.ingress_port, meta.color);
    }

    action drop() {
        mark_to_drop(standard_metadata);
    }

    apply {
        port_packets.count((bit<32>)standard_metadata.ingress_port);
        port_bytes.count((bit<32>)standard_metadata.ingress_port);
        random<bit<8>>(meta.rnd, 0, 255);
        random(meta.rnd, 8w1, 8w100);
        if (hdr.ipv4.isValid()) {
            compute_slot();
            count_hit();
            police();
            log_msg("slot {} hits {}", { meta.slot, meta.hits });
            assert(hdr.ipv4.version == 4);
            assume(hdr.ipv4.ihl >= 5);
        } else {
            log_msg("not IPv4");
        }
        if (meta.color == V1MODEL_METER_COLOR_RED) {
            drop();
        } else {
            standard_metadata.egress_spec = 1;
        }
    }
}

control XEgress(inout headers_t hdr,
                inout meta_t meta,
                inout standard_metadata_t standard_metadata) {
    action cut() {
        truncate(64);
    }

    apply {
        if (standard_metadata.packet_length > 1500) {
            cut();
        }
    }
}

control NoCompute(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control XDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(XParser(), NoVerify(), XIngress(), XEgress(), NoCompute(), XDeparser()) main;
