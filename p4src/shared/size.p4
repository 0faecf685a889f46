/*
 * p4cache — every size the data plane uses, in one place.
 *
 * Each of these is a compile-time constant, as on a hardware target: register arrays, header
 * stacks and match-key widths are fixed when the pipeline is built. Only the ones guarded with
 * #ifndef can be overridden with `-D NAME=VALUE` (softnic compile and p4c-bm2-ss both take it):
 * KMAX, KEY_BITS, CACHE_SLOTS, HOT_THRESHOLD and EPOCH_SHIFT, keeping KMAX and KEY_BITS in step.
 * The others are plain #defines: a -D for them is replaced by the definition here, so they
 * change only by editing this file (and BLOOM_WIDTH and REPLY_MAX not even then without more
 * edits, see below).
 */
#ifndef P4CACHE_SIZE_P4
#define P4CACHE_SIZE_P4

/* Longest key the switch can cache, in bytes. memcached allows 250; 64 covers the keys of the
 * Facebook pools and BMC's workloads while keeping the match key (KMAX * 8 bits) small. */
#ifndef KMAX
#define KMAX 64
#endif
/* Width of the match key: must be KMAX * 8 (P4 needs the literal here). */
#ifndef KEY_BITS
#define KEY_BITS 512
#endif

/* Longest memcached command word the parser reads ("prepend" and "replace" have 7 bytes). */
#define CMD_MAX 8
/* Blanks the parser skips between a write's command word and its key (memcached accepts runs of
 * spaces there). A write with more leading blanks is forwarded without invalidating anything:
 * see docs/dataplane.md, "Limits". */
#define SPACES_MAX 4
/* Bytes of a command line after the key that the parser reads up to its "\r\n": further keys of
 * a multi-key get, a write's other tokens, or the rest of a key longer than KMAX. A datagram is
 * only known to hold nothing but that one line if the whole line was read. */
#define REST_MAX 255
/* IPv4 options are parsed as 32-bit words (a header holds at most 10), so a write carrying
 * them is still seen. */
#define IPV4_OPTION_WORDS 10

/* Stored reply bytes per slot: the whole "VALUE <key> <flags> <bytes>\r\n<data>\r\nEND\r\n".
 * The reply is assembled from chunks of 256, 128, ..., 1 bytes selected by the bits of
 * (length - 1), plus one tail byte that is always present, so 1..512 bytes fit exactly. The
 * chunk headers, the parser's reply states and SlotStore are laid out for 512, so changing it
 * means changing them too (docs/deployment.md, "Key and value widths"). */
#define REPLY_MAX 512

/* Number of cache slots: lookup entries, per-slot registers and per-slot hit counters. */
#ifndef CACHE_SLOTS
#define CACHE_SLOTS 4096
#endif

/* Hot-key detection: a count-min sketch of three rows of SKETCH_WIDTH cells, four
 * cells per slot per row, so a key's estimate is rarely inflated by the keys the cache already
 * holds; and a Bloom filter of two rows of BLOOM_WIDTH cells remembering which keys were
 * reported in the current epoch. Widths are powers of two (the hash is reduced modulo them).
 * hot_keys.p4 hard-codes 15-bit filter indices sliced from the CRC-32, which assume BLOOM_WIDTH
 * 32768: changing it means changing those slices too. */
#define SKETCH_WIDTH 16384
#define BLOOM_WIDTH 32768

/* A key is reported once its estimate reaches the admission threshold within one epoch. The
 * threshold is run-time state (the default action of HotKeys' `admission` table, which the
 * controller rewrites as the cache fills); HOT_THRESHOLD is its value until the controller
 * sets one, and what a switch without a controller uses. */
#ifndef HOT_THRESHOLD
#define HOT_THRESHOLD 8
#endif
/* Epoch length: 2^EPOCH_SHIFT microseconds of the switch clock (20: about 1.05 s). Sketch and
 * filter cells carry the epoch they were written in, so a new epoch starts from zero without
 * any register write from the control plane. */
#ifndef EPOCH_SHIFT
#define EPOCH_SHIFT 20
#endif

/* Forwarding and policy tables. */
#define L2_TABLE_SIZE 1024
#define ROUTE_TABLE_SIZE 1024
#define ALLOWLIST_SIZE 256
#define AGENT_TABLE_SIZE 64

#endif
