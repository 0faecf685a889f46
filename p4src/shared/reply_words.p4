/*
 * p4cache — the stored reply as 64-bit words.
 *
 * A reply is up to REPLY_MAX bytes held in switch memory. Hardware register arrays have narrow
 * cells (32 or 64 bits), so every chunk of 8 bytes or more is a header of 64-bit words and each
 * word is one register cell. Reading a chunk is one register read per word, all independent of
 * each other. In slot_store.p4 the words of a chunk are consecutive cells of one array (32 of
 * store_c256 per slot), so a hit reads up to 32 cells of one array in one packet: BMv2 and
 * softnic allow it, but a hardware target (Tofino) accesses each array once per packet and would
 * need one register array per word position, which these macros make mechanical
 * (docs/deployment.md).
 *
 * These X-macros list the words of a chunk once, so the header fields, the register reads and
 * the register writes of a chunk cannot disagree: WORDS_32(X, c256) expands to
 * X(c256, 0) X(c256, 1) ... X(c256, 31).
 */
#ifndef P4CACHE_REPLY_WORDS_P4
#define P4CACHE_REPLY_WORDS_P4

#define WORDS_1(X, C)  X(C, 0)
#define WORDS_2(X, C)  WORDS_1(X, C) X(C, 1)
#define WORDS_4(X, C)  WORDS_2(X, C) X(C, 2) X(C, 3)
#define WORDS_8(X, C)  WORDS_4(X, C) X(C, 4) X(C, 5) X(C, 6) X(C, 7)
#define WORDS_16(X, C) WORDS_8(X, C) X(C, 8) X(C, 9) X(C, 10) X(C, 11) \
                       X(C, 12) X(C, 13) X(C, 14) X(C, 15)
#define WORDS_32(X, C) WORDS_16(X, C) X(C, 16) X(C, 17) X(C, 18) X(C, 19) \
                       X(C, 20) X(C, 21) X(C, 22) X(C, 23) X(C, 24) X(C, 25) \
                       X(C, 26) X(C, 27) X(C, 28) X(C, 29) X(C, 30) X(C, 31)

/* One 64-bit field of a chunk header. */
#define WORD_FIELD(C, I) bit<64> w##I;

#endif
