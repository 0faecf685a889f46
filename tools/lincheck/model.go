package main

// The sequential specification: one memcached item (a register) per key, with
// TTL expiry. porcupine checks each key on its own (the history is split by
// key before checking), so the state is a single item.
//
// Expiry is encoded in the state instead of using porcupine's
// NondeterministicModel: a stored item carries the window [expEarliest,
// expLatest] of real times (ns) in which it may expire, and the step function
// uses the call/return times of the operation being linearized:
//   - a get may return the item's value only if its call time is before
//     expLatest (it can be linearized at a moment the item was still there);
//   - a get may miss while the model holds an item only if its return time is
//     after expEarliest; the item has then expired and the state becomes
//     "absent" (memcached's clock never goes back, so it stays expired);
//   - a delete may answer "ok" only under the first condition and "not_found"
//     under the second, and leaves the key absent either way.
// This is exact: porcupine only produces orders consistent with real time, so
// linearization points can be chosen greedily, and every operation linearized
// on the same item before a hit has a call time before expLatest as well
// (see docs/lincheck.md).
//
// Outcome-unknown writes (no reply, "unknown" or "error") have return time
// `never` and accept any output: the set or delete may be linearized anywhere
// after its call, including after every other operation, which is the same as
// not having happened. Gets without a reply are dropped before checking.

import (
	"fmt"
	"hash/fnv"
	"time"

	"github.com/anishathalye/porcupine"
)

type opKind uint8

const (
	opGet opKind = iota
	opSet
	opDelete
)

type regInput struct {
	kind  opKind
	key   string
	value string // set
	ttl   int64  // set, seconds
	call  int64
	ret   int64 // never for an unknown outcome
	// set: window of real times in which the stored item may expire
	expEarliest int64
	expLatest   int64
}

type outKind uint8

const (
	outValue    outKind = iota // get hit
	outMiss                    // get miss
	outOK                      // set stored / delete deleted
	outNotFound                // delete found nothing
	outUnknown                 // no reply or an error: any effect allowed
)

type regOutput struct {
	kind  outKind
	value string
}

// regState is the item of one key; comparable, so porcupine's == equality works.
type regState struct {
	present     bool
	value       string
	expEarliest int64
	expLatest   int64
}

var absent = regState{}

// step is the model's transition: may the operation, linearized now, have
// returned out, and what is the item after it.
func step(s regState, in regInput, out regOutput) (bool, regState) {
	switch in.kind {
	case opSet:
		// a set's reply never depends on the state; unknown or ok, it stores
		return true, regState{present: true, value: in.value, expEarliest: in.expEarliest, expLatest: in.expLatest}
	case opDelete:
		switch out.kind {
		case outUnknown:
			return true, absent
		case outOK:
			return s.present && in.call < s.expLatest, absent
		case outNotFound:
			return !s.present || in.ret > s.expEarliest, absent
		}
	case opGet:
		switch out.kind {
		case outMiss:
			if !s.present {
				return true, s
			}
			return in.ret > s.expEarliest, absent
		case outValue:
			return s.present && s.value == out.value && in.call < s.expLatest, s
		}
	}
	return false, s
}

// newModel builds the porcupine model; start (ns) makes descriptions relative.
func newModel(start int64) porcupine.Model {
	return porcupine.Model{
		Init: func() interface{} { return absent },
		Step: func(state, input, output interface{}) (bool, interface{}) {
			return step(state.(regState), input.(regInput), output.(regOutput))
		},
		Hash: func(state interface{}) uint64 {
			s := state.(regState)
			h := fnv.New64a()
			fmt.Fprintf(h, "%t|%d|%d|%s", s.present, s.expEarliest, s.expLatest, s.value)
			return h.Sum64()
		},
		DescribeOperation: func(input, output interface{}) string {
			return describeOp(input.(regInput), output.(regOutput))
		},
		DescribeState: func(state interface{}) string {
			return describeState(state.(regState), start)
		},
		DescribeOperationMetadata: func(info interface{}) string {
			return fmt.Sprintf("history line %d", info.(int))
		},
	}
}

func short(v string) string {
	if len(v) > 40 {
		return fmt.Sprintf("%q...(%d bytes)", v[:32], len(v))
	}
	return fmt.Sprintf("%q", v)
}

func describeOp(in regInput, out regOutput) string {
	var res string
	switch out.kind {
	case outValue:
		res = short(out.value)
	case outMiss:
		res = "miss"
	case outOK:
		res = "ok"
	case outNotFound:
		res = "not_found"
	default:
		res = "unknown"
	}
	switch in.kind {
	case opSet:
		return fmt.Sprintf("set(%s, ttl=%d) -> %s", short(in.value), in.ttl, res)
	case opDelete:
		return "delete() -> " + res
	default:
		return "get() -> " + res
	}
}

func describeState(s regState, start int64) string {
	if !s.present {
		return "absent"
	}
	if s.expEarliest == never {
		return short(s.value)
	}
	rel := func(t int64) string {
		if t == never {
			return "inf"
		}
		return (time.Duration(t - start)).Round(time.Millisecond).String()
	}
	return fmt.Sprintf("%s, expires in [%s, %s]", short(s.value), rel(s.expEarliest), rel(s.expLatest))
}

func fnv32(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}
