/* softnic: P4_16 core library.
 * Declares the same API as p4c's p4include/core.p4 (p4c 1.2.4), so that programs written
 * against it compile unchanged with softnic and with real p4c. Written for softnic. */

#ifndef _CORE_P4_
#define _CORE_P4_

/* Errors every P4_16 target knows about; programs may add more with their own error {...}. */
error {
    NoError,               // no error happened
    PacketTooShort,        // extract/lookahead ran past the end of the packet
    NoMatch,               // no case of a select matched
    StackOutOfBounds,      // .next past the end of a stack, or .last of an empty one
    HeaderTooShort,        // a varbit extract asked for more bits than the field holds
    ParserTimeout,         // the parser exceeded its time budget
    ParserInvalidArgument  // a parser operation got an argument it cannot use
}

/* The packet being parsed. */
extern packet_in {
    /* Copy the next bits of the packet into a fixed-size header and make it valid. */
    void extract<T>(out T hdr);
    /* Same for a header whose single varbit field takes variableFieldSizeInBits bits. */
    void extract<T>(out T variableSizeHeader, in bit<32> variableFieldSizeInBits);
    /* Read the next bits without consuming them. */
    T lookahead<T>();
    /* Skip sizeInBits bits. */
    void advance(in bit<32> sizeInBits);
    /* Length of the whole packet, in bytes. */
    bit<32> length();
}

/* The packet being built by a deparser. */
extern packet_out {
    /* Append hdr if it is valid (stacks and structs: each valid member, in order). */
    void emit<T>(in T hdr);
}

/* In a parser: when check is false, stop parsing with error toSignal. */
extern void verify(in bool check, in error toSignal);

/* The action every table may use to do nothing. */
@noWarn("unused")
action NoAction() {}

/* Match kinds of the core language. */
match_kind {
    exact,
    ternary,
    lpm
}

/* Compile-time assertion (evaluates to true when it holds). */
extern bool static_assert(bool check, string message);
extern bool static_assert(bool check);

#endif  /* _CORE_P4_ */
