/*
 * p4cache — an in-network cache for memcached, v1model (BMv2, softnic).
 *
 * A memcached UDP `get <key>\r\n` for a key the controller placed in the cache is answered by the
 * switch, byte for byte as memcached would answer it; everything else is forwarded unchanged.
 * Writes seen in flight invalidate the key; values arrive as versioned control datagrams; keys
 * that miss often are reported to the controller. See docs/dataplane.md for the walkthrough.
 *
 *   ingress:  KeyParse -> ControlTrust -> CacheLookup -> WritesAndUpdates -> SlotStore
 *             -> HotKeys -> CacheStats -> Respond (hits, acknowledgements) or Forwarding
 */
#include <core.p4>
#include <v1model.p4>

#include "../shared/header.p4"
#include "include/parser.p4"
#include "include/control/checksums.p4"
#include "include/control/forwarding.p4"
#include "include/control/key_parse.p4"
#include "include/control/writes_updates.p4"
#include "include/control/lookup_reply.p4"
#include "include/control/slot_store.p4"
#include "include/control/hot_keys.p4"
#include "include/control/stats.p4"

control CacheIngress(inout headers_t hdr,
                     inout local_metadata_t meta,
                     inout standard_metadata_t std_meta) {

    Forwarding() forwarding;
    KeyParse() key_parse;
    ControlTrust() control_trust;
    CacheLookup() lookup;
    WritesAndUpdates() writes_updates;
    SlotStore() slots;
    HotKeys() hot_keys;
    Respond() respond;
    CacheStats() stats;

    apply {
        if (hdr.packet_out.isValid()) {
            meta.from_cpu = 1;
            if (!hdr.ctrl.isValid()) {
                /* A frame the controller sends out of a port of its choice. */
                std_meta.egress_spec = hdr.packet_out.egress_port;
                hdr.packet_out.setInvalid();
                exit;
            }
            hdr.packet_out.setInvalid();
        }
        key_parse.apply(hdr, meta, std_meta);
        control_trust.apply(hdr, meta, std_meta);
        lookup.apply(hdr, meta);
        writes_updates.apply(hdr, meta, std_meta);
        slots.apply(hdr, meta);
        hot_keys.apply(hdr, meta, std_meta);
        stats.apply(hdr, meta);
        if (meta.hit == 1 || meta.kind == KIND_CTRL) {
            respond.apply(hdr, meta, std_meta);
        } else if (meta.untrusted == 1) {
            mark_to_drop(std_meta);
        } else {
            /* Forwarding decides last, on the headers as they arrived. */
            forwarding.apply(hdr, meta, std_meta);
        }
    }
}

control CacheEgress(inout headers_t hdr,
                    inout local_metadata_t meta,
                    inout standard_metadata_t std_meta) {
    apply { }
}

V1Switch(CacheParser(),
         CacheVerifyChecksum(),
         CacheIngress(),
         CacheEgress(),
         CacheComputeChecksum(),
         CacheDeparser()) main;
