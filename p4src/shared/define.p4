/*
 * p4cache — constants shared by every target: ports, protocol values, op codes, counter indices.
 */
#ifndef P4CACHE_DEFINE_P4
#define P4CACHE_DEFINE_P4

#include "size.p4"

typedef bit<9>  port_t;
typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
typedef bit<16> slot_t;
typedef bit<32> version_t;

#define ETHERTYPE_IPV4 0x0800
#define IP_PROTO_UDP 17

/* UDP port of memcached (its default). Requests to it are inspected; everything else is only
 * forwarded. */
#ifndef MEMCACHED_PORT
#define MEMCACHED_PORT 11211
#endif
/* UDP port of the cache's control datagrams (versioned updates, see docs/update-protocol.md). */
#ifndef CACHE_CTRL_PORT
#define CACHE_CTRL_PORT 11311
#endif

/* The CPU port: packet-out arrives from it, packet-in (acknowledgements) leave by it. */
#ifndef CPU_PORT
#define CPU_PORT 255
#endif

/* What the parser saw in a memcached datagram (set by the classify_command table). */
#define KIND_OTHER 0
#define KIND_GET 1
#define KIND_WRITE 2
#define KIND_CTRL 3     // a trusted control datagram
#define KIND_UNSAFE 4   // may change items in ways the switch cannot follow: flushes the cache
#define KIND_READ 5     // a read-only command other than a single-key get (gets)

/* What SlotStore does with meta.slot. */
#define SLOT_OP_NONE 0
#define SLOT_OP_HIT 1         // answer a GET if the slot is valid
#define SLOT_OP_WRITE 2       // a write to the key went by: invalidate, mark written
#define SLOT_OP_UPDATE 3      // versioned update or invalidation (OP_UPDATE)
#define SLOT_OP_INVALIDATE 4  // OP_INVALIDATE_KEY: as SLOT_OP_WRITE, acknowledged
#define SLOT_OP_READ 5        // OP_READ

/* Control datagram op codes; an acknowledgement has the same op with ACK_FLAG set. */
#define OP_UPDATE 1          // slot, version, reply bytes (none = invalidate)
#define OP_INVALIDATE_KEY 2  // "<key>\r\n": invalidate whatever slot serves the key
#define OP_READ 3            // report the slot's version, length and state
#define OP_FLUSH 4           // no body: every slot stops answering (the cache generation moves on)
#define ACK_FLAG 0x80

/* Status of an acknowledgement. */
#define STATUS_APPLIED 1     // the update or invalidation took effect
#define STATUS_STALE 2       // version not newer than the slot's: ignored
#define STATUS_WRITTEN 3     // a write invalidated the slot since its last invalidation: refill lost
#define STATUS_BAD 4         // slot out of range, length over REPLY_MAX or not matching the datagram
#define STATUS_NOT_CACHED 5  // OP_INVALIDATE_KEY: no slot serves that key
#define STATUS_VALID 6       // OP_READ: the slot answers GETs
#define STATUS_INVALID 7     // OP_READ: the slot does not answer GETs

/* Indices of the global cache_stats counter. */
#define STAT_HIT 0           // GETs answered by the switch
#define STAT_MISS 1          // candidate GETs forwarded to the server
#define STAT_INVALIDATE 2    // slots invalidated by a write seen in the data plane
#define STAT_UPDATE 3        // control updates applied
#define STAT_STALE 4         // control updates ignored (stale, written or bad)
#define STAT_REPORT 5        // hot-key digests sent
#define STAT_UNTRUSTED 6     // control datagrams from a source not in trusted_agents (dropped)
#define STAT_NOT_ALLOWED 7   // candidate GETs from clients outside the allow-list (forwarded)
#define STAT_FLUSH 8         // datagrams that could change items the switch cannot tell: all slots
                             // invalidated (flush_all, gat, a second command, a first fragment to
                             // the memcached port, any later UDP fragment, ...), then forwarded;
                             // and OP_FLUSH datagrams applied
#define STAT_REFILL 9        // GETs of a cached key whose slot stopped answering that asked for a
                             // refill (once per fill; the digest may be that GET's hot-key report)
#define STATS_SIZE 10

/* Fixed lengths used to rebuild IPv4 and UDP lengths. */
#define IPV4_HDR_BYTES 20
#define UDP_HDR_BYTES 8
#define MEMCACHE_HDR_BYTES 8
#define CTRL_HDR_BYTES 10

#endif
