/*
 * p4cache — parser and deparser.
 *
 * The parser only looks into plain IPv4/UDP datagrams to the memcached port or the cache's
 * control port. The ASCII command is read one byte at a time, with a one-byte lookahead deciding
 * where each word ends: a hardware parser can do this because every loop is bounded by the size
 * of the stack it fills (CMD_MAX, SPACES_MAX, KMAX). Bytes the parser does not consume stay
 * payload and leave the switch unchanged.
 *
 * Whatever the parser cannot make sense of ends in `accept` (or in a parser error, which v1model
 * passes to ingress in standard_metadata.parser_error): the packet is then forwarded as it came.
 */

parser CacheParser(packet_in packet,
                   out headers_t hdr,
                   inout local_metadata_t meta,
                   inout standard_metadata_t std_meta) {

    state start {
        transition select(std_meta.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }

    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    /* UDP is looked into when the datagram starts here (fragment offset 0). A first fragment
     * (MF set) or a header with options is never answered (KeyParse), but a write inside one
     * must still be seen, so options are parsed too, one 32-bit word at a time. */
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.frag_offset,
                          hdr.ipv4.protocol) {
            (4w4, 4w5, 13w0, IP_PROTO_UDP): parse_udp;
            (4w4, 4w0 &&& 4w0xc, _, _): accept;      // ihl 0..3: malformed
            (4w4, 4w4, _, _): accept;                // ihl 4: malformed
            (4w4, _, 13w0, IP_PROTO_UDP): parse_ipv4_options;
            default: accept;
        }
    }

    state parse_ipv4_options {
        meta.ipv4_option_words = hdr.ipv4.ihl - 5;
        transition parse_ipv4_option;
    }

    state parse_ipv4_option {
        transition select(meta.ipv4_option_words) {
            0: parse_udp;
            default: parse_ipv4_option_word;
        }
    }

    state parse_ipv4_option_word {
        packet.extract(hdr.ipv4_options.next);
        meta.ipv4_option_words = meta.ipv4_option_words - 1;
        transition parse_ipv4_option;
    }

    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            MEMCACHED_PORT: parse_memcache;
            CACHE_CTRL_PORT: parse_ctrl;
            default: accept;
        }
    }

    /* "get " is by far the most frequent command: it is matched as one 32-bit word, as a
     * hardware parser would match a fixed string, instead of byte by byte. */
    state parse_memcache {
        packet.extract(hdr.memcache);
        transition select(packet.lookahead<bit<32>>()) {
            0x67657420: parse_get;
            default: parse_cmd;
        }
    }

    state parse_get {
        packet.extract(hdr.get_cmd);
        meta.cmd = 0x676574;
        meta.cmd_len = 3;
        meta.spaces = 1;
        transition parse_spaces;
    }

    /* The command word: bytes up to the first blank, at most CMD_MAX of them. */
    state parse_cmd {
        transition select(meta.cmd_len, packet.lookahead<bit<8>>()) {
            (_, 0x20): parse_spaces;
            (_, 0x0d): parse_key_end;         // a command without arguments ("version\r\n")
            (_, 0x00 &&& 0xe0): accept;
            (_, 0x7f): accept;
            (CMD_MAX, _): accept;
            default: parse_cmd_byte;
        }
    }

    state parse_cmd_byte {
        packet.extract(hdr.cmd.next);
        meta.cmd = (meta.cmd << 8) | (bit<64>)hdr.cmd.last.b;
        meta.cmd_len = meta.cmd_len + 1;
        transition parse_cmd;
    }

    /* The blanks between command word and key. */
    state parse_spaces {
        transition select(meta.spaces, packet.lookahead<bit<8>>()) {
            (SPACES_MAX, 0x20): parse_spaces_overflow;
            (_, 0x20): parse_space_byte;
            default: parse_key;
        }
    }

    state parse_spaces_overflow {
        meta.spaces_overflow = 1;
        transition accept;
    }

    state parse_space_byte {
        packet.extract(hdr.spaces.next);
        meta.spaces = meta.spaces + 1;
        transition parse_spaces;
    }

    /* The key: printable bytes up to a blank, a control byte or DEL. It is also shifted into
     * meta.key, the single wide field cache_lookup matches on together with meta.key_len. */
    state parse_key {
        transition select(meta.key_len, packet.lookahead<bit<8>>()) {
            (_, 0x00 &&& 0xe0): parse_key_end;
            (_, 0x20): parse_key_end;
            (_, 0x7f): parse_key_end;
            (KMAX, _): parse_key_overflow;
            default: parse_key_byte;
        }
    }

    state parse_key_byte {
        packet.extract(hdr.key.next);
        meta.key = (meta.key << 8) | (bit<KEY_BITS>)hdr.key.last.b;
        meta.key_len = meta.key_len + 1;
        transition parse_key;
    }

    /* A key longer than KMAX cannot be cached; the rest of it is read as the rest of the line. */
    state parse_key_overflow {
        meta.key_overflow = 1;
        transition parse_rest;
    }

    state parse_key_end {
        transition select(packet.lookahead<bit<16>>()) {
            0x0d0a: parse_crlf;
            default: parse_rest;
        }
    }

    /* The rest of the line up to "\r\n" (more keys, a write's tokens), so that the switch knows
     * whether the datagram holds exactly one command line or more. */
    state parse_rest {
        transition select(meta.rest_len, packet.lookahead<bit<16>>()) {
            (_, 0x0d0a): parse_crlf;
            /* memcached also ends a line at a bare "\n": what follows may be another command,
             * so such a line does not count as the datagram's only one. */
            (_, 0x0a00 &&& 0xff00): parse_rest_overflow;
            (REST_MAX, _): parse_rest_overflow;
            (_, 0x6200 &&& 0xff00): parse_rest_b;
            default: parse_rest_byte;
        }
    }

    /* A "b" in a meta command's flags says its key is base64: remember that one was seen. */
    state parse_rest_b {
        meta.rest_has_b = 1;
        transition parse_rest_byte;
    }

    state parse_rest_byte {
        packet.extract(hdr.rest.next);
        meta.rest_len = meta.rest_len + 1;
        transition parse_rest;
    }

    state parse_rest_overflow {
        meta.rest_overflow = 1;
        transition accept;
    }

    state parse_crlf {
        packet.extract(hdr.crlf);
        transition accept;
    }

    /* Control datagrams: an update carries the reply in the same chunks the switch stores it in,
     * so the data plane copies header words to register cells without shifting bytes around. */
    state parse_ctrl {
        packet.extract(hdr.ctrl);
        transition select(hdr.ctrl.op, hdr.ctrl.len) {
            (ACK_FLAG &&& ACK_FLAG, _): accept;   // an acknowledgement: dropped in ingress
            (OP_UPDATE, 0): accept;
            (OP_UPDATE, _): parse_reply;
            (OP_INVALIDATE_KEY, _): parse_key;
            default: accept;
        }
    }

    state parse_reply {
        meta.chunk_bits = hdr.ctrl.len - 1;
        transition select(meta.chunk_bits) {
            16w0 &&& 16w0xfe00: parse_c256;   // 1..REPLY_MAX bytes
            default: accept;                  // too long: refused in ingress
        }
    }

    state parse_c256 {
        transition select(meta.chunk_bits[8:8]) {
            1: extract_c256;
            default: parse_c128;
        }
    }
    state extract_c256 {
        packet.extract(hdr.c256);
        transition parse_c128;
    }
    state parse_c128 {
        transition select(meta.chunk_bits[7:7]) {
            1: extract_c128;
            default: parse_c64;
        }
    }
    state extract_c128 {
        packet.extract(hdr.c128);
        transition parse_c64;
    }
    state parse_c64 {
        transition select(meta.chunk_bits[6:6]) {
            1: extract_c64;
            default: parse_c32;
        }
    }
    state extract_c64 {
        packet.extract(hdr.c64);
        transition parse_c32;
    }
    state parse_c32 {
        transition select(meta.chunk_bits[5:5]) {
            1: extract_c32;
            default: parse_c16;
        }
    }
    state extract_c32 {
        packet.extract(hdr.c32);
        transition parse_c16;
    }
    state parse_c16 {
        transition select(meta.chunk_bits[4:4]) {
            1: extract_c16;
            default: parse_c8;
        }
    }
    state extract_c16 {
        packet.extract(hdr.c16);
        transition parse_c8;
    }
    state parse_c8 {
        transition select(meta.chunk_bits[3:3]) {
            1: extract_c8;
            default: parse_c4;
        }
    }
    state extract_c8 {
        packet.extract(hdr.c8);
        transition parse_c4;
    }
    state parse_c4 {
        transition select(meta.chunk_bits[2:2]) {
            1: extract_c4;
            default: parse_c2;
        }
    }
    state extract_c4 {
        packet.extract(hdr.c4);
        transition parse_c2;
    }
    state parse_c2 {
        transition select(meta.chunk_bits[1:1]) {
            1: extract_c2;
            default: parse_c1;
        }
    }
    state extract_c2 {
        packet.extract(hdr.c2);
        transition parse_c1;
    }
    state parse_c1 {
        transition select(meta.chunk_bits[0:0]) {
            1: extract_c1;
            default: extract_tail;
        }
    }
    state extract_c1 {
        packet.extract(hdr.c1);
        transition extract_tail;
    }
    state extract_tail {
        packet.extract(hdr.tail);
        transition accept;
    }
}

control CacheDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ipv4_options);
        packet.emit(hdr.udp);
        packet.emit(hdr.memcache);
        packet.emit(hdr.ctrl);
        packet.emit(hdr.get_cmd);
        packet.emit(hdr.cmd);
        packet.emit(hdr.spaces);
        packet.emit(hdr.key);
        packet.emit(hdr.rest);
        packet.emit(hdr.crlf);
        packet.emit(hdr.c256);
        packet.emit(hdr.c128);
        packet.emit(hdr.c64);
        packet.emit(hdr.c32);
        packet.emit(hdr.c16);
        packet.emit(hdr.c8);
        packet.emit(hdr.c4);
        packet.emit(hdr.c2);
        packet.emit(hdr.c1);
        packet.emit(hdr.tail);
    }
}
