/*
 * p4cache — the cache's memory: per-slot state and the stored replies.
 *
 * Per slot: valid (answers GETs), written (a write went by since the last invalidation),
 * version (of the last update or invalidation applied), length (of the stored reply), and the
 * cache generation it was last invalidated in, and whether a GET has already asked for a refill
 * since the slot was last filled. A flush (a datagram the switch cannot read to its
 * end, or an OP_FLUSH control datagram) moves the one global generation on:
 * every slot of an older generation stops answering at once, and a refill prepared before the
 * flush can no longer be applied, without touching the slots one by one. The reply
 * itself lives in one register array per chunk size; a slot's chunk of 2^k >= 8 bytes is 2^k / 8
 * consecutive 64-bit cells. All of it is written only by the data plane: updates arrive as
 * control datagrams (BMv2's P4Runtime server cannot write registers, p4lang/PI#376, and a
 * hardware pipeline updates its own memory at line rate this way).
 *
 * The per-slot state arrays, cache_generation and the one-cell-per-slot reply arrays (store_c8,
 * store_c4, store_c2, store_c1, store_tail) take at most one access per packet: one read, one
 * write or one read-then-write of a cell, the shape a hardware stateful ALU can execute. The
 * wider reply arrays do not: a hit reads, and a fill writes, all 2^k / 8 cells of a chunk in one
 * packet (READ_WORD / WRITE_WORD at base + I: up to 32 cells of store_c256). BMv2 and softnic
 * allow that; a hardware target (Tofino) accesses each array once per packet and would need one
 * register array per word position (docs/deployment.md, docs/dataplane.md "Resources").
 */

#define READ_WORD(C, I) store_##C.read(hdr.C.w##I, base + I);
#define WRITE_WORD(C, I) store_##C.write(base + I, hdr.C.w##I);

control SlotStore(inout headers_t hdr, inout local_metadata_t meta) {

    register<bit<1>>(CACHE_SLOTS) slot_valid;
    register<bit<1>>(CACHE_SLOTS) slot_written;
    register<version_t>(CACHE_SLOTS) slot_version;
    register<bit<16>>(CACHE_SLOTS) slot_len;
    /* 64 bits: no number of flushes can wrap a generation back to one a slot was filled in. */
    register<bit<64>>(CACHE_SLOTS) slot_generation;
    register<bit<64>>(1) cache_generation;
    /* 1 once a GET found the slot unable to answer (a write, an invalidation or a flush since
     * its fill) and asked for a refill; a fill clears it. One ask per slot and fill: a key
     * written a thousand times a second costs the controller one digest per refill, not one per
     * GET, and the ask needs no epoch to pass as a hot-key report does. */
    register<bit<1>>(CACHE_SLOTS) slot_refill_asked;

    register<bit<64>>(CACHE_SLOTS * 32) store_c256;
    register<bit<64>>(CACHE_SLOTS * 16) store_c128;
    register<bit<64>>(CACHE_SLOTS * 8) store_c64;
    register<bit<64>>(CACHE_SLOTS * 4) store_c32;
    register<bit<64>>(CACHE_SLOTS * 2) store_c16;
    register<bit<64>>(CACHE_SLOTS) store_c8;
    register<bit<32>>(CACHE_SLOTS) store_c4;
    register<bit<16>>(CACHE_SLOTS) store_c2;
    register<bit<8>>(CACHE_SLOTS) store_c1;
    register<bit<8>>(CACHE_SLOTS) store_tail;

    action load_c256() {
        bit<32> base = (bit<32>)meta.slot << 5;
        hdr.c256.setValid();
        WORDS_32(READ_WORD, c256)
    }
    action load_c128() {
        bit<32> base = (bit<32>)meta.slot << 4;
        hdr.c128.setValid();
        WORDS_16(READ_WORD, c128)
    }
    action load_c64() {
        bit<32> base = (bit<32>)meta.slot << 3;
        hdr.c64.setValid();
        WORDS_8(READ_WORD, c64)
    }
    action load_c32() {
        bit<32> base = (bit<32>)meta.slot << 2;
        hdr.c32.setValid();
        WORDS_4(READ_WORD, c32)
    }
    action load_c16() {
        bit<32> base = (bit<32>)meta.slot << 1;
        hdr.c16.setValid();
        WORDS_2(READ_WORD, c16)
    }
    action load_tail() {
        bit<32> base = (bit<32>)meta.slot;
        hdr.tail.setValid();
        store_tail.read(hdr.tail.w0, base);
    }
    action load_c8() {
        bit<32> base = (bit<32>)meta.slot;
        hdr.c8.setValid();
        WORDS_1(READ_WORD, c8)
    }
    action load_c4() {
        hdr.c4.setValid();
        store_c4.read(hdr.c4.w0, (bit<32>)meta.slot);
    }
    action load_c2() {
        hdr.c2.setValid();
        store_c2.read(hdr.c2.w0, (bit<32>)meta.slot);
    }
    action load_c1() {
        hdr.c1.setValid();
        store_c1.read(hdr.c1.w0, (bit<32>)meta.slot);
    }

    action save_c256() {
        bit<32> base = (bit<32>)meta.slot << 5;
        WORDS_32(WRITE_WORD, c256)
    }
    action save_c128() {
        bit<32> base = (bit<32>)meta.slot << 4;
        WORDS_16(WRITE_WORD, c128)
    }
    action save_c64() {
        bit<32> base = (bit<32>)meta.slot << 3;
        WORDS_8(WRITE_WORD, c64)
    }
    action save_c32() {
        bit<32> base = (bit<32>)meta.slot << 2;
        WORDS_4(WRITE_WORD, c32)
    }
    action save_c16() {
        bit<32> base = (bit<32>)meta.slot << 1;
        WORDS_2(WRITE_WORD, c16)
    }
    action save_c8() {
        bit<32> base = (bit<32>)meta.slot;
        WORDS_1(WRITE_WORD, c8)
    }
    action save_c4() {
        store_c4.write((bit<32>)meta.slot, hdr.c4.w0);
    }
    action save_c2() {
        store_c2.write((bit<32>)meta.slot, hdr.c2.w0);
    }
    action save_c1() {
        store_c1.write((bit<32>)meta.slot, hdr.c1.w0);
    }
    action save_tail() {
        store_tail.write((bit<32>)meta.slot, hdr.tail.w0);
    }

    apply {
        /* Packets that neither use a slot nor flush touch no register here. */
        if (meta.slot_op != SLOT_OP_NONE || meta.flush == 1) {
            bit<32> idx = (bit<32>)meta.slot;
            bit<64> generation;
            cache_generation.read(generation, 0);
            bit<64> slot_gen = 0;
            if (meta.slot < CACHE_SLOTS) {
                slot_generation.read(slot_gen, idx);
            }
            if (meta.slot >= CACHE_SLOTS) {
                meta.status = STATUS_BAD;
            } else if (meta.slot_op == SLOT_OP_HIT) {
                bit<1> valid;
                slot_valid.read(valid, idx);
                if (valid == 1 && slot_gen == generation) {
                    slot_len.read(meta.reply_len, idx);
                    /* The chunks present are the set bits of (length - 1); the tail byte always is. */
                    bit<16> bits = meta.reply_len - 1;
                    if (bits[8:8] == 1) { load_c256(); }
                    if (bits[7:7] == 1) { load_c128(); }
                    if (bits[6:6] == 1) { load_c64(); }
                    if (bits[5:5] == 1) { load_c32(); }
                    if (bits[4:4] == 1) { load_c16(); }
                    if (bits[3:3] == 1) { load_c8(); }
                    if (bits[2:2] == 1) { load_c4(); }
                    if (bits[1:1] == 1) { load_c2(); }
                    if (bits[0:0] == 1) { load_c1(); }
                    load_tail();
                    meta.hit = 1;
                } else {
                    bit<1> asked;
                    slot_refill_asked.read(asked, idx);
                    if (asked == 0) {
                        slot_refill_asked.write(idx, 1);
                        meta.refill = 1;
                    }
                }
            } else if (meta.slot_op == SLOT_OP_WRITE) {
                /* A write to the key is on its way to memcached: stop answering, and make any refill
                 * fetched before this moment lose (only a newer invalidation clears `written`). */
                slot_valid.write(idx, 0);
                slot_written.write(idx, 1);
            } else if (meta.slot_op == SLOT_OP_UPDATE) {
                version_t current;
                bit<1> written;
                slot_version.read(current, idx);
                slot_written.read(written, idx);
                if (hdr.ctrl.version <= current) {
                    meta.status = STATUS_STALE;
                } else if (hdr.ctrl.len != 0 && (written == 1 || slot_gen != generation)) {
                    meta.status = STATUS_WRITTEN;   // a write or a flush since the invalidation
                } else {
                    slot_version.write(idx, hdr.ctrl.version);
                    slot_len.write(idx, hdr.ctrl.len);
                    if (hdr.ctrl.len == 0) {
                        slot_valid.write(idx, 0);
                        slot_written.write(idx, 0);
                        slot_generation.write(idx, generation);
                    } else {
                        if (hdr.c256.isValid()) { save_c256(); }
                        if (hdr.c128.isValid()) { save_c128(); }
                        if (hdr.c64.isValid()) { save_c64(); }
                        if (hdr.c32.isValid()) { save_c32(); }
                        if (hdr.c16.isValid()) { save_c16(); }
                        if (hdr.c8.isValid()) { save_c8(); }
                        if (hdr.c4.isValid()) { save_c4(); }
                        if (hdr.c2.isValid()) { save_c2(); }
                        if (hdr.c1.isValid()) { save_c1(); }
                        save_tail();
                        slot_valid.write(idx, 1);
                        slot_refill_asked.write(idx, 0);
                    }
                    meta.status = STATUS_APPLIED;
                }
            } else if (meta.slot_op == SLOT_OP_INVALIDATE) {
                slot_valid.write(idx, 0);
                slot_written.write(idx, 1);
                meta.status = STATUS_APPLIED;
            } else if (meta.slot_op == SLOT_OP_READ) {
                bit<1> valid;
                slot_valid.read(valid, idx);
                slot_version.read(hdr.ctrl.version, idx);
                slot_len.read(hdr.ctrl.len, idx);
                if (valid == 1 && slot_gen == generation) {
                    meta.status = STATUS_VALID;
                } else {
                    meta.status = STATUS_INVALID;
                }
            }
            if (meta.flush == 1) {
                cache_generation.write(0, generation + 1);
            }
        }
    }
}
