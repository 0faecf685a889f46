/*
 * p4cache — counters the controller reads over P4Runtime.
 *
 * cache_stats holds the global counts (indices STAT_* in shared/define.p4); slot_hits counts the
 * GETs each slot answered, which the controller turns into per-key frequencies for eviction.
 */

control CacheStats(inout headers_t hdr, inout local_metadata_t meta) {

    counter(STATS_SIZE, CounterType.packets) cache_stats;
    counter(CACHE_SLOTS, CounterType.packets_and_bytes) slot_hits;

    apply {
        if (meta.hit == 1) {
            cache_stats.count(STAT_HIT);
            slot_hits.count((bit<32>)meta.slot);
        } else if (meta.kind == KIND_GET) {  // a candidate (KeyParse)
            if (meta.allowed == 1) {
                cache_stats.count(STAT_MISS);
            } else {
                cache_stats.count(STAT_NOT_ALLOWED);
            }
        }
        if (meta.slot_op == SLOT_OP_WRITE || meta.slot_op == SLOT_OP_INVALIDATE) {
            cache_stats.count(STAT_INVALIDATE);
        }
        if (meta.kind == KIND_CTRL && hdr.ctrl.op == OP_UPDATE) {
            if (meta.status == STATUS_APPLIED) {
                cache_stats.count(STAT_UPDATE);
            } else {
                cache_stats.count(STAT_STALE);
            }
        }
        if (meta.reported == 1) {
            cache_stats.count(STAT_REPORT);
        }
        if (meta.refill == 1) {
            cache_stats.count(STAT_REFILL);
        }
        if (meta.untrusted == 1) {
            cache_stats.count(STAT_UNTRUSTED);
        }
        if (meta.flush == 1) {
            cache_stats.count(STAT_FLUSH);
        }
    }
}
