/*
 * p4cache — hot-key detection on misses (NetCache's heavy-hitter detector).
 *
 * A count-min sketch of three rows estimates how often each missed key was requested in the
 * current epoch; once the estimate reaches the admission threshold T, a two-row Bloom filter
 * decides whether the key was already reported this epoch, and if not the switch sends one digest
 * (server, key length, key, estimate) to the controller. The key is reported again, without the
 * filter, when its estimate reaches exactly 2T, 4T, 8T and 16T in the same epoch (the estimate
 * grows by one per miss, so each level is passed once): a hot key's report then says how hot
 * within a fraction of an epoch instead of only "at least T", which is what lets the controller
 * prefer it to a cached key at once when the hot set moves. At most five reports per key and
 * epoch. Every cell carries the epoch it was last written in, derived from the
 * switch clock, so a new epoch starts from zero with no register writes from the control plane,
 * as a hardware pipeline would do it with one stateful ALU per row.
 *
 * Three hashes of (server, key) feed everything: a CRC-32 and two CRC-16s over the fields in
 * different orders (different linear functions, so the rows collide independently). Their low
 * bits index the sketch; two other slices of the CRC-32 index the filter, as a hardware hash
 * unit's output is sliced among several tables. Epoch tags wrap after 2^15 epochs (about 9.5 h),
 * which at worst hides one report.
 *
 * The admission threshold is the one action parameter of the keyless `admission` table, whose
 * default action the controller rewrites over P4Runtime (HOT_THRESHOLD until it does): lower
 * while the cache has free slots, so that keys missed less often are reported too, higher as it
 * fills, so that only keys hotter than the coldest cached one are (docs/controller.md,
 * "Admission threshold"). A table and not a register because P4Runtime writes tables on every
 * target (BMv2 serves no register writes over P4Runtime), and because on a hardware pipeline an
 * action parameter is read with the table's action data at no cost to the stateful ALUs.
 *
 * A cached key whose slot cannot answer (written, invalidated or flushed since its fill) is
 * reported at its first miss instead, once per fill (SlotStore's `slot_refill_asked`): the
 * controller refills the slot with the value memcached now holds, within milliseconds of the
 * write rather than an epoch later. The same digest carries it; the controller tells the two
 * apart by whether it has the key cached.
 */

control HotKeys(inout headers_t hdr,
                inout local_metadata_t meta,
                in standard_metadata_t std_meta) {

    register<bit<32>>(SKETCH_WIDTH) sketch0;
    register<bit<32>>(SKETCH_WIDTH) sketch1;
    register<bit<32>>(SKETCH_WIDTH) sketch2;
    register<bit<16>>(BLOOM_WIDTH) bloom0;
    register<bit<16>>(BLOOM_WIDTH) bloom1;

    action set_admission(bit<16> threshold) {
        meta.hot_threshold = threshold;
    }

    /* No key: only the default action, which the controller modifies. */
    table admission {
        actions = { set_admission; }
        default_action = set_admission(HOT_THRESHOLD);
    }

    apply {
        if (meta.kind == KIND_GET && meta.allowed == 1 && meta.hit == 0) {
            admission.apply();
            bit<16> epoch = (bit<16>)(std_meta.ingress_global_timestamp >> EPOCH_SHIFT);
            bit<32> h0;
            bit<32> h1;
            bit<32> h2;
            hash(h0, HashAlgorithm.crc32, 32w0, {meta.server_addr, meta.key_len, meta.key},
                 64w0x100000000);
            hash(h1, HashAlgorithm.crc16, 32w0, {meta.server_addr, meta.key_len, meta.key},
                 32w0x10000);
            hash(h2, HashAlgorithm.crc16, 32w0, {meta.key, meta.key_len, meta.server_addr},
                 32w0x10000);
            bit<32> i0 = h0 & (SKETCH_WIDTH - 1);
            bit<32> i1 = h1 & (SKETCH_WIDTH - 1);
            bit<32> i2 = h2 & (SKETCH_WIDTH - 1);

            /* Each cell: epoch in the high half, count in the low half (saturating). */
            bit<32> c0;
            bit<32> c1;
            bit<32> c2;
            sketch0.read(c0, i0);
            sketch1.read(c1, i1);
            sketch2.read(c2, i2);
            if (c0[31:16] != epoch) { c0 = epoch ++ 16w0; }
            if (c1[31:16] != epoch) { c1 = epoch ++ 16w0; }
            if (c2[31:16] != epoch) { c2 = epoch ++ 16w0; }
            if (c0[15:0] != 0xffff) { c0 = c0 + 1; }
            if (c1[15:0] != 0xffff) { c1 = c1 + 1; }
            if (c2[15:0] != 0xffff) { c2 = c2 + 1; }
            sketch0.write(i0, c0);
            sketch1.write(i1, c1);
            sketch2.write(i2, c2);

            bit<16> estimate = c0[15:0];
            if (c1[15:0] < estimate) { estimate = c1[15:0]; }
            if (c2[15:0] < estimate) { estimate = c2[15:0]; }

            /* The controller keeps T at most 4095, so 16 T fits the 16-bit count. */
            bit<16> t = meta.hot_threshold;
            if (estimate == t << 1 || estimate == t << 2 || estimate == t << 3
                    || estimate == t << 4) {
                meta.reported = 1;
            }
            if (estimate >= t) {
                /* A filter cell holds 0x8000 | epoch of the report that set it (0 = never). */
                bit<16> tag = 16w0x8000 | (epoch & 16w0x7fff);
                bit<32> j0 = h0 >> (32 - 15);      // high bits of the CRC-32
                bit<32> j1 = (h0 >> 2) & 0x7fff;   // middle bits, another linear function
                bit<16> t0;
                bit<16> t1;
                bloom0.read(t0, j0);
                bloom1.read(t1, j1);
                if (t0 != tag || t1 != tag) {
                    bloom0.write(j0, tag);
                    bloom1.write(j1, tag);
                    meta.reported = 1;
                }
            }
            /* One digest carries a hot-key report, a refill ask, or both (counted apart). */
            if (meta.reported == 1 || meta.refill == 1) {
                digest<hot_key_digest_t>(1, {meta.server_addr, meta.key_len, meta.key,
                                             estimate});
            }
        }
    }
}
