/* softnic: the v1model architecture (BMv2 simple_switch).
 * Declares the same API as p4c's p4include/v1model.p4 (p4c 1.2.4, V1MODEL_VERSION 20200408),
 * so that programs written against it compile unchanged with softnic and with real p4c.
 * Written for softnic. */

#ifndef _V1_MODEL_P4_
#define _V1_MODEL_P4_

#ifndef V1MODEL_VERSION
#define V1MODEL_VERSION 20200408
#endif

#include "core.p4"

/* Extra match kinds of v1model: range and optional keys, and the action selector input. */
match_kind {
    range,
    optional,
    selector
}

const bit<32> __v1model_version = V1MODEL_VERSION;

/* Per-packet metadata of simple_switch. The @alias names are BMv2's own field names. */
@metadata @name("standard_metadata")
struct standard_metadata_t {
    bit<9>  ingress_port;
    bit<9>  egress_spec;       // set by ingress: output port (511 drops)
    bit<9>  egress_port;       // seen by egress: the port the packet leaves on
    bit<32> instance_type;     // normal, clone, resubmit, recirculate, replica (see BMV2_* below)
    bit<32> packet_length;
    @alias("queueing_metadata.enq_timestamp")
    bit<32> enq_timestamp;
    @alias("queueing_metadata.enq_qdepth")
    bit<19> enq_qdepth;
    @alias("queueing_metadata.deq_timedelta")
    bit<32> deq_timedelta;
    @alias("queueing_metadata.deq_qdepth")
    bit<19> deq_qdepth;
    @alias("intrinsic_metadata.ingress_global_timestamp")
    bit<48> ingress_global_timestamp;
    @alias("intrinsic_metadata.egress_global_timestamp")
    bit<48> egress_global_timestamp;
    @alias("intrinsic_metadata.mcast_grp")
    bit<16> mcast_grp;         // nonzero: replicate to this multicast group
    @alias("intrinsic_metadata.egress_rid")
    bit<16> egress_rid;        // replica id of a multicast copy
    bit<1>  checksum_error;    // set when verify_checksum found a bad checksum
    error   parser_error;      // error the parser ended with
    @alias("intrinsic_metadata.priority")
    bit<3>  priority;
}

enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

enum MeterType {
    packets,
    bytes
}

/* An array of counters indexed by the program. */
extern counter {
    counter(bit<32> size, CounterType type);
    void count(in bit<32> index);
}

/* One counter per entry of the table it is attached to (table property 'counters'). */
extern direct_counter {
    direct_counter(CounterType type);
    void count();
}

#define V1MODEL_METER_COLOR_GREEN  0
#define V1MODEL_METER_COLOR_YELLOW 1
#define V1MODEL_METER_COLOR_RED    2

/* An array of two-rate three-color meters; result: 0 green, 1 yellow, 2 red. */
extern meter {
    meter(bit<32> size, MeterType type);
    void execute_meter<T>(in bit<32> index, out T result);
}

/* One meter per table entry (table property 'meters'). */
extern direct_meter<T> {
    direct_meter(MeterType type);
    void read(out T result);
}

/* An array of stateful cells of type T. */
extern register<T> {
    register(bit<32> size);
    @noSideEffects
    void read(out T result, in bit<32> index);
    void write(in bit<32> index, in T value);
}

/* Table property 'implementation': actions held in a shared profile. */
extern action_profile {
    action_profile(bit<32> size);
}

/* result = a random value in lo..hi (inclusive). */
extern void random<T>(out T result, in T lo, in T hi);

/* Send data to the control plane; a named struct type T names the digest in P4Info. */
extern void digest<T>(in bit<32> receiver, in T data);

enum HashAlgorithm {
    crc32,
    crc32_custom,
    crc16,
    crc16_custom,
    random,
    identity,
    csum16,
    xor16
}

@deprecated("Please use mark_to_drop(standard_metadata) instead.")
extern void mark_to_drop();

/* Drop the packet: sets egress_spec to the drop port and clears mcast_grp. */
@pure
extern void mark_to_drop(inout standard_metadata_t standard_metadata);

/* result = base + (hash of data) % max, or base when max is 0. */
@pure
extern void hash<O, T, D, M>(out O result, in HashAlgorithm algo, in T base, in D data, in M max);

/* Table property 'implementation': profile whose members are picked by a hash of the
 * 'selector' key fields. */
extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size, bit<32> outputWidth);
}

enum CloneType {
    I2E,
    E2E
}

@deprecated("Please use verify_checksum/update_checksum instead.")
extern Checksum16 {
    Checksum16();
    bit<16> get<D>(in D data);
}

/* In the VerifyChecksum control: if condition holds and the checksum of data differs from
 * checksum, set standard_metadata.checksum_error. */
extern void verify_checksum<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

/* In the ComputeChecksum control: if condition holds, checksum = checksum of data. */
@pure
extern void update_checksum<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* As verify_checksum, with the unparsed payload appended to data. */
extern void verify_checksum_with_payload<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

/* As update_checksum, with the unparsed payload appended to data. */
@noSideEffects
extern void update_checksum_with_payload<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* Send a copy of the packet to the clone session 'session' at the end of this pipeline. */
extern void clone(in CloneType type, in bit<32> session);

@deprecated("Please use 'resubmit_preserving_field_list' instead")
extern void resubmit<T>(in T data);
/* Run ingress again on the original packet, keeping user metadata fields tagged
 * @field_list(index). */
extern void resubmit_preserving_field_list(bit<8> index);

@deprecated("Please use 'recirculate_preserving_field_list' instead")
extern void recirculate<T>(in T data);
/* Feed the deparsed packet back into the parser, keeping fields tagged @field_list(index). */
extern void recirculate_preserving_field_list(bit<8> index);

@deprecated("Please use 'clone_preserving_field_list' instead")
extern void clone3<T>(in CloneType type, in bit<32> session, in T data);
/* clone(), keeping user metadata fields tagged @field_list(index) in the copy. */
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);

/* Cut the outgoing packet to at most length bytes. */
extern void truncate(in bit<32> length);

/* Debugging aids of simple_switch: a false assert/assume stops the switch with a log line. */
extern void assert(in bool check);
extern void assume(in bool check);

/* Write a message to the switch log; "{}" in msg is replaced by the fields of data. */
extern void log_msg(string msg);
extern void log_msg<T>(string msg, in T data);

/* The six programmable blocks of the v1model pipeline. H: struct of headers; M: user metadata. */
parser Parser<H, M>(packet_in b,
                    out H parsedHdr,
                    inout M meta,
                    inout standard_metadata_t standard_metadata);

control VerifyChecksum<H, M>(inout H hdr,
                             inout M meta);

@pipeline
control Ingress<H, M>(inout H hdr,
                      inout M meta,
                      inout standard_metadata_t standard_metadata);

@pipeline
control Egress<H, M>(inout H hdr,
                     inout M meta,
                     inout standard_metadata_t standard_metadata);

control ComputeChecksum<H, M>(inout H hdr,
                              inout M meta);

@deparser
control Deparser<H>(packet_out b, in H hdr);

package V1Switch<H, M>(Parser<H, M> p,
                       VerifyChecksum<H, M> vr,
                       Ingress<H, M> ig,
                       Egress<H, M> eg,
                       ComputeChecksum<H, M> ck,
                       Deparser<H> dep);

#endif  /* _V1_MODEL_P4_ */
