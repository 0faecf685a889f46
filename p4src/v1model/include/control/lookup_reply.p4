/*
 * p4cache — cache lookup, and the allow-list that decides who may be answered.
 *
 * The match key is (server, key length, key bytes right-aligned in KEY_BITS bits): a value is
 * only ever served for the server that holds it, the length keeps "ab" and "\0ab" apart, and
 * keys sharing a prefix are different values. An exact-match table
 * is what a hardware target holds in SRAM/hash tables at line rate; the entry only names a slot,
 * whose registers (SlotStore) hold the reply and its state.
 */

control CacheLookup(inout headers_t hdr, inout local_metadata_t meta) {

    action set_slot(slot_t slot) {
        meta.cached = 1;
        meta.slot = slot;
    }

    table cache_lookup {
        key = {
            meta.server_addr: exact @name("server_addr");
            meta.key_len: exact @name("key_len");
            meta.key: exact @name("key");
        }
        actions = {
            set_slot;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = CACHE_SLOTS;
    }

    action allow_client() {
        meta.allowed = 1;
    }

    /* Clients the switch may answer. Requests from anywhere else go to memcached, so the switch
     * is never an open UDP amplifier for spoofed sources. */
    table client_allowlist {
        key = {
            hdr.ipv4.src_addr: lpm @name("src_addr");
        }
        actions = {
            allow_client;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = ALLOWLIST_SIZE;
    }

    apply {
        if (meta.kind == KIND_GET) {
            client_allowlist.apply();
        }
        if (meta.kind == KIND_GET || meta.kind == KIND_WRITE
                || (meta.kind == KIND_CTRL && hdr.ctrl.op == OP_INVALIDATE_KEY)) {
            cache_lookup.apply();
        }
        if (meta.kind == KIND_GET && meta.allowed == 1 && meta.cached == 1) {
            meta.slot_op = SLOT_OP_HIT;
        }
    }
}

/*
 * Turns a request into its reply in place: the same frame goes back out of the port it came in
 * by, with addresses and ports swapped and the lengths of what is now in it. The UDP checksum is
 * set to 0 ("no checksum", RFC 768): the reply bytes come from registers after the parser, where a
 * switch cannot cheaply sum them (docs/dataplane.md). The IPv4 checksum is recomputed.
 */
control Respond(inout headers_t hdr,
                inout local_metadata_t meta,
                inout standard_metadata_t std_meta) {

    action turn_around() {
        bit<16> payload_len = meta.payload_len;
        mac_addr_t mac = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = hdr.ethernet.src_addr;
        hdr.ethernet.src_addr = mac;
        ipv4_addr_t ip = hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = hdr.ipv4.src_addr;
        hdr.ipv4.src_addr = ip;
        hdr.ipv4.ttl = 64;
        hdr.ipv4.total_len = IPV4_HDR_BYTES + UDP_HDR_BYTES + payload_len;
        bit<16> port = hdr.udp.dst_port;
        hdr.udp.dst_port = hdr.udp.src_port;
        hdr.udp.src_port = port;
        hdr.udp.length = UDP_HDR_BYTES + payload_len;
        hdr.udp.checksum = 0;
        std_meta.egress_spec = std_meta.ingress_port;
        meta.rewrite_ipv4 = 1;
        /* Bytes after the request (Ethernet padding) must not trail the reply. BMv2 keeps the
         * smallest length of all truncate calls, so there is exactly one, counting the
         * packet-in header when the frame goes to the CPU. */
        truncate((bit<32>)hdr.ipv4.total_len + 14 + ((bit<32>)meta.from_cpu << 1));
    }

    action to_cpu() {
        hdr.packet_in.setValid();
        hdr.packet_in.ingress_port = std_meta.ingress_port;
    }

    apply {
        if (meta.hit == 1) {
            /* The request's command line gives way to the stored reply. */
            hdr.get_cmd.setInvalid();
            hdr.cmd.pop_front(CMD_MAX);
            hdr.spaces.pop_front(SPACES_MAX);
            hdr.key.pop_front(KMAX);
            hdr.crlf.setInvalid();
            hdr.memcache.seq = 0;
            hdr.memcache.total = 1;
            meta.payload_len = MEMCACHE_HDR_BYTES + meta.reply_len;
            turn_around();
        } else if (meta.kind == KIND_CTRL) {
            /* Acknowledge a control datagram with its header alone. */
            hdr.ctrl.op = hdr.ctrl.op | ACK_FLAG;
            hdr.ctrl.status = meta.status;
            hdr.key.pop_front(KMAX);
            hdr.crlf.setInvalid();
            hdr.c256.setInvalid();
            hdr.c128.setInvalid();
            hdr.c64.setInvalid();
            hdr.c32.setInvalid();
            hdr.c16.setInvalid();
            hdr.c8.setInvalid();
            hdr.c4.setInvalid();
            hdr.c2.setInvalid();
            hdr.c1.setInvalid();
            hdr.tail.setInvalid();
            meta.payload_len = CTRL_HDR_BYTES;
            turn_around();
            if (meta.from_cpu == 1) {
                to_cpu();
            }
        }
    }
}
