/*
 * p4cache — what the parsed command line is.
 *
 * The parser has split a memcached datagram into command word, blanks, key and the rest of the
 * line; this control names the command (one exact match, as a hardware table would) and keeps a
 * GET a cache candidate only when it is exactly one single-key, single-datagram `get <key>\r\n`
 * with nothing after it. Every other shape is left to memcached. A datagram that may change
 * items the switch cannot name (memcached runs every command line in a datagram), and every IPv4
 * fragment that may complete a UDP datagram the switch could not read, sets meta.flush: every
 * slot is invalidated before the frame goes on.
 */

control KeyParse(inout headers_t hdr,
                 inout local_metadata_t meta,
                 in standard_metadata_t std_meta) {

    action set_kind(bit<8> kind) {
        meta.kind = kind;
    }

    /* The command word, right-aligned in meta.cmd: "get" is 0x676574. The entries are
     * const, so they are the whole table: no `size` (a target sizes a const table from its
     * entries; p4c-bm2-ss warns about a size given here and ignores it). */
    table classify_command {
        key = {
            meta.cmd_len: exact @name("cmd_len");
            meta.cmd: exact @name("cmd");
        }
        actions = {
            set_kind;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        const entries = {
            (3, 0x676574): set_kind(KIND_GET);              // get
            (4, 0x67657473): set_kind(KIND_READ);           // gets
            (3, 0x736574): set_kind(KIND_WRITE);            // set
            (3, 0x616464): set_kind(KIND_WRITE);            // add
            (3, 0x636173): set_kind(KIND_WRITE);            // cas
            (4, 0x696e6372): set_kind(KIND_WRITE);          // incr
            (4, 0x64656372): set_kind(KIND_WRITE);          // decr
            (5, 0x746f756368): set_kind(KIND_WRITE);        // touch
            (6, 0x64656c657465): set_kind(KIND_WRITE);      // delete
            (6, 0x617070656e64): set_kind(KIND_WRITE);      // append
            (7, 0x70726570656e64): set_kind(KIND_WRITE);    // prepend
            (7, 0x7265706c616365): set_kind(KIND_WRITE);    // replace
            (2, 0x6d73): set_kind(KIND_WRITE);              // ms (meta set)
            (2, 0x6d64): set_kind(KIND_WRITE);              // md (meta delete)
            (2, 0x6d61): set_kind(KIND_WRITE);              // ma (meta arithmetic)
            /* mg is a read, but its flags can touch or vivify the item: treated as a write. */
            (2, 0x6d67): set_kind(KIND_WRITE);              // mg (meta get)
            /* These change items in ways the data plane cannot follow (gat/gats name their keys
             * after the expiry time, and may name many; flush_all empties everything): they
             * flush the switch's cache. */
            (3, 0x676174): set_kind(KIND_UNSAFE);           // gat
            (4, 0x67617473): set_kind(KIND_UNSAFE);         // gats
            (8, 0x666c7573685f616c): set_kind(KIND_UNSAFE); // flush_al(l)
        }
    }

    apply {
        if (hdr.udp.isValid() && hdr.udp.dst_port == MEMCACHED_PORT && hdr.ipv4.flags[0:0] == 1) {
            /* A first fragment: the rest of the datagram, which the host will reassemble, is
             * out of sight and may hold any command. */
            meta.flush = 1;
        }
        if (hdr.ipv4.isValid() && hdr.ipv4.version == 4 && hdr.ipv4.frag_offset != 0
                && hdr.ipv4.protocol == IP_PROTO_UDP) {
            /* A later fragment of a UDP datagram: it carries no UDP header, so the switch cannot
             * tell whether the datagram is for memcached, but the fragment that completes the
             * host's reassembly is the first one (above) or one of these, and memcached runs the
             * datagram only then. Flushing at every fragment flushes at that one, before
             * memcached can apply a write inside (docs/dataplane.md, Limits; docs/coherence.md
             * §5.1). Any UDP destination: no server address is known here for a datagram
             * without its UDP header. */
            meta.flush = 1;
        }
        if (hdr.memcache.isValid()) {
            meta.server_addr = hdr.ipv4.dst_addr;
            classify_command.apply();
            if (hdr.cmd[0].isValid() && hdr.cmd[0].b == 0x80) {
                /* memcached's binary protocol: its writes cannot be read here. */
                meta.kind = KIND_UNSAFE;
            }
            /* Does the datagram hold exactly one command line, all of it read? Lengths must
             * account for every byte: command word, blanks, key, the rest of the line and
             * "\r\n", and nothing after (memcached runs every line of a datagram). */
            bit<16> line = 2 + (bit<16>)meta.cmd_len + (bit<16>)meta.spaces
                           + (bit<16>)meta.key_len + (bit<16>)meta.rest_len;
            bool one_line = std_meta.parser_error == error.NoError
                            && hdr.crlf.isValid()
                            && hdr.ipv4.ihl == 5
                            && hdr.ipv4.flags[0:0] == 0
                            && hdr.memcache.seq == 0
                            && hdr.memcache.total == 1
                            && hdr.memcache.reserved == 0
                            && hdr.udp.length == UDP_HDR_BYTES + MEMCACHE_HDR_BYTES + line
                            && hdr.ipv4.total_len
                               == IPV4_HDR_BYTES + UDP_HDR_BYTES + MEMCACHE_HDR_BYTES + line;
            if (meta.kind == KIND_GET) {
                /* A cache candidate is exactly `get <key>\r\n`: one blank, one key of
                 * 1..KMAX bytes, nothing else on the line, with a correct IPv4 header. */
                if (!one_line) {
                    meta.flush = 1;   // a second command may follow
                }
                if (!one_line || std_meta.checksum_error != 0 || meta.spaces != 1
                        || meta.key_len == 0 || meta.key_overflow == 1 || meta.rest_len != 0) {
                    meta.kind = KIND_READ;
                }
            } else if (meta.kind == KIND_READ) {
                if (!one_line) {
                    meta.flush = 1;
                }
            } else if (meta.kind == KIND_WRITE) {
                /* The key is invalidated whatever follows it. A storage command's data block,
                 * or anything else after the line, may hold more commands: flush. So does a
                 * meta command that may name its key in base64 (a "b" flag): the key read here
                 * would not be the item's. */
                if (!one_line || meta.key_len == 0
                        || (meta.cmd_len == 2 && meta.rest_has_b == 1)) {
                    meta.flush = 1;
                }
                if (meta.key_len == 0 || meta.key_overflow == 1) {
                    meta.kind = KIND_OTHER;
                }
            } else if (meta.kind == KIND_UNSAFE || !one_line || meta.cmd_len == 0) {
                /* flush_all, gat/gats, the binary protocol, a line starting with a blank (memcached
                 * skips it and may run a write), anything but one whole line: it may change items
                 * the switch cannot name. One whole line with an unknown command word cannot
                 * (memcached answers ERROR), nor can version, stats and the like. */
                meta.flush = 1;
            }
        }
    }
}
