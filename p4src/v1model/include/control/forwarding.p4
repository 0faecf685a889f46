/*
 * p4cache — forwarding of ordinary traffic.
 *
 * Hosts on the switch's own segment are bridged on their destination MAC, so their frames leave
 * exactly as they came (a cache miss reaches memcached byte for byte). Traffic to other subnets is
 * routed on a longest-prefix match, with the MAC rewrite and TTL decrement of p4lang/tutorials'
 * basic.p4. Both tables are filled by the controller from the topology.
 */

control Forwarding(inout headers_t hdr,
                   inout local_metadata_t meta,
                   inout standard_metadata_t std_meta) {

    action drop() {
        mark_to_drop(std_meta);
    }

    action bridge(port_t port) {
        std_meta.egress_spec = port;
    }

    table l2_forward {
        key = {
            hdr.ethernet.dst_addr: exact @name("dst_addr");
        }
        actions = {
            bridge;
            drop;
        }
        const default_action = drop();
        size = L2_TABLE_SIZE;
    }

    action route(mac_addr_t src_mac, mac_addr_t dst_mac, port_t port) {
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        std_meta.egress_spec = port;
        meta.rewrite_ipv4 = 1;
    }

    table ipv4_route {
        key = {
            hdr.ipv4.dst_addr: lpm @name("dst_addr");
        }
        actions = {
            route;
            drop;
        }
        const default_action = drop();
        size = ROUTE_TABLE_SIZE;
    }

    apply {
        if (!hdr.ethernet.isValid()) {
            drop();  // a runt frame: nothing to forward it on
        } else if (!l2_forward.apply().hit) {
            /* Routing rewrites the header, so a corrupted one is dropped, not repaired. */
            if (hdr.ipv4.isValid() && hdr.ipv4.ttl > 1 && std_meta.checksum_error == 0) {
                ipv4_route.apply();
            }
        }
    }
}
