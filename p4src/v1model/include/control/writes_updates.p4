/*
 * p4cache — writes seen in flight, and versioned updates from the control plane.
 *
 * Coherence (docs/dataplane.md): a UDP write to a cached key marks its slot invalid and
 * `written` before the write is forwarded to memcached, so no GET is answered from the slot
 * after memcached may have changed the item. Values reach the slots only through control
 * datagrams; each carries a version and is applied only if newer than the slot's, so a delayed
 * or duplicated update can never overwrite a newer one. OP_FLUSH lets a host agent flush the
 * whole cache for a write it cannot name, exactly as an unreadable datagram does.
 */

control ControlTrust(inout headers_t hdr,
                     inout local_metadata_t meta,
                     inout standard_metadata_t std_meta) {

    action trust_agent() {
        meta.trusted = 1;
    }

    /* Host agents allowed to send control datagrams: the port each one is behind and its
     * address, so that another host cannot pass for it by spoofing the address. */
    table trusted_agents {
        key = {
            std_meta.ingress_port: exact @name("ingress_port");
            hdr.ipv4.src_addr: exact @name("src_addr");
        }
        actions = {
            trust_agent;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = AGENT_TABLE_SIZE;
    }

    apply {
        if (hdr.ctrl.isValid() && ((hdr.ctrl.op & ACK_FLAG) != 0
                                   || hdr.ipv4.ihl != 5 || hdr.ipv4.flags[0:0] != 0)) {
            /* Acknowledgements are for agents and the controller; one arriving here is dropped,
             * so two switches can never bounce them between each other. Control datagrams are
             * plain IPv4 (no options, not a fragment), so the acknowledgement made from one in
             * place is well formed. */
            meta.untrusted = 1;
            mark_to_drop(std_meta);
        } else if (hdr.ctrl.isValid()) {
            /* The agent next to a memcached server speaks for it (the controller's packet-out
             * names the server as the source too). */
            meta.server_addr = hdr.ipv4.src_addr;
            if (meta.from_cpu == 1) {
                meta.trusted = 1;
            } else {
                trusted_agents.apply();
            }
            if (meta.trusted == 1) {
                meta.kind = KIND_CTRL;
            } else {
                /* Nobody else may touch the cache, and the datagram is meant for the switch:
                 * it goes nowhere. */
                meta.untrusted = 1;
                mark_to_drop(std_meta);
            }
        }
    }
}

control WritesAndUpdates(inout headers_t hdr,
                         inout local_metadata_t meta,
                         in standard_metadata_t std_meta) {
    apply {
        if (meta.kind == KIND_WRITE) {
            if (meta.cached == 1) {
                meta.slot_op = SLOT_OP_WRITE;
            }
        } else if (meta.kind == KIND_CTRL) {
            if (std_meta.parser_error != error.NoError) {
                meta.status = STATUS_BAD;
            } else if (hdr.ctrl.op == OP_UPDATE) {
                /* The datagram must hold exactly the reply bytes it announces. */
                if (hdr.ctrl.len > REPLY_MAX
                        || hdr.udp.length != UDP_HDR_BYTES + CTRL_HDR_BYTES + hdr.ctrl.len) {
                    meta.status = STATUS_BAD;
                } else {
                    meta.slot = hdr.ctrl.slot;
                    meta.slot_op = SLOT_OP_UPDATE;
                }
            } else if (hdr.ctrl.op == OP_INVALIDATE_KEY) {
                if (meta.key_len == 0 || meta.key_overflow == 1 || meta.rest_len != 0
                        || !hdr.crlf.isValid()) {
                    meta.status = STATUS_BAD;
                } else if (meta.cached == 1) {
                    meta.slot_op = SLOT_OP_INVALIDATE;
                } else {
                    meta.status = STATUS_NOT_CACHED;
                }
            } else if (hdr.ctrl.op == OP_READ) {
                meta.slot = hdr.ctrl.slot;
                meta.slot_op = SLOT_OP_READ;
            } else if (hdr.ctrl.op == OP_FLUSH) {
                /* The agent cannot name what a write did (flush_all, a command it cannot parse):
                 * the same flush as a datagram the switch cannot read, one register write in
                 * SlotStore. It has no body, so the UDP length alone tells a well-formed one. It
                 * cannot fail once decided here (the generation register takes any increment),
                 * so it is acknowledged APPLIED now; slot, version and length go back as sent,
                 * the version serving the agent as a request id. */
                if (hdr.udp.length != UDP_HDR_BYTES + CTRL_HDR_BYTES) {
                    meta.status = STATUS_BAD;
                } else {
                    meta.flush = 1;
                    meta.status = STATUS_APPLIED;
                }
            } else {
                meta.status = STATUS_BAD;
            }
        }
    }
}
