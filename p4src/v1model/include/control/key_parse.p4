/*
 * p4cache — what the parsed command line is.
 *
 * The parser has split a memcached datagram into command word, blanks and key; this control
 * names the command (one exact match, as a hardware table would) and keeps a GET a cache
 * candidate only when it is exactly one single-key, single-datagram `get <key>\r\n` with nothing
 * after it. Every other shape is left to memcached.
 */

control KeyParse(inout headers_t hdr,
                 inout local_metadata_t meta,
                 in standard_metadata_t std_meta) {

    action set_kind(bit<8> kind) {
        meta.kind = kind;
    }

    /* The command word, right-aligned in meta.cmd: "get" is 0x676574. */
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
            /* These change items in ways the data plane cannot follow: gat/gats name their keys
             * after the expiry time (and may name many), flush_all empties the whole cache. */
            (3, 0x676174): set_kind(KIND_UNSAFE);           // gat
            (4, 0x67617473): set_kind(KIND_UNSAFE);         // gats
            (8, 0x666c7573685f616c): set_kind(KIND_UNSAFE); // flush_al(l)
        }
        size = 24;
    }

    apply {
        if (hdr.memcache.isValid()) {
            meta.server_addr = hdr.ipv4.dst_addr;
            classify_command.apply();
            if (hdr.cmd[0].isValid() && hdr.cmd[0].b == 0x80) {
                /* memcached's binary protocol: its writes cannot be read here. */
                meta.kind = KIND_UNSAFE;
            }
            if (meta.kind == KIND_GET) {
                /* Lengths must account for every byte: "get" + one blank + key + "\r\n" and
                 * nothing after, so a second key, a `gets` or trailing bytes never match. */
                bit<16> payload = MEMCACHE_HDR_BYTES + 4 + 2 + (bit<16>)meta.key_len;
                if (std_meta.parser_error != error.NoError
                        || std_meta.checksum_error != 0
                        || hdr.ipv4.ihl != 5
                        || hdr.ipv4.flags[0:0] != 0
                        || hdr.memcache.seq != 0
                        || hdr.memcache.total != 1
                        || hdr.memcache.reserved != 0
                        || meta.spaces != 1
                        || meta.key_len == 0
                        || !hdr.crlf.isValid()
                        || hdr.udp.length != UDP_HDR_BYTES + payload
                        || hdr.ipv4.total_len != IPV4_HDR_BYTES + UDP_HDR_BYTES + payload) {
                    meta.kind = KIND_OTHER;
                }
            } else if (meta.kind == KIND_WRITE) {
                /* A write invalidates whatever key the parser read, whatever follows it: a key
                 * longer than KMAX cannot be cached anyway. A key hidden behind more blanks
                 * than the parser reads could be cached: such a write is unsafe. */
                if (meta.spaces_overflow == 1) {
                    meta.kind = KIND_UNSAFE;
                } else if (meta.key_len == 0 || meta.key_overflow == 1) {
                    meta.kind = KIND_OTHER;
                }
            }
        }
    }
}
