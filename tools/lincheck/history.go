package main

// Reading a history: JSON lines, one per operation (format in docs/lincheck.md).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"time"
)

// never is the return time of an operation whose outcome is unknown and the
// expiry time of an item that never expires.
const never int64 = math.MaxInt64

// maxRelativeTTL is memcached's limit: a larger exptime is a unix timestamp.
const maxRelativeTTL = 30 * 24 * 3600

// record is one line of the history file as written.
type record struct {
	Client *int    `json:"client"`
	Key    *string `json:"key"`
	Op     string  `json:"op"`
	Value  *string `json:"value"`
	TTL    *int64  `json:"ttl"`
	Call   *int64  `json:"call"`
	Return *int64  `json:"return"`
	Result present `json:"result"`
}

// present is a JSON value that remembers whether its field was there at all
// (null and absent differ for "result": a miss vs. no answer given).
type present struct {
	set bool
	raw json.RawMessage
}

func (p *present) UnmarshalJSON(b []byte) error {
	p.set = true
	p.raw = append(json.RawMessage(nil), b...)
	return nil
}

// history is a parsed history: the checkable operations by key, plus counts.
type history struct {
	byKey   map[string][]opRecord
	keys    []string // sorted, for a stable report
	read    int      // lines with an operation
	dropped int      // gets without a reply: they constrain nothing
	start   int64    // smallest call time, for readable descriptions
}

// opRecord is an operation ready for porcupine plus what the report needs.
type opRecord struct {
	line   int
	client int
	in     regInput
	out    regOutput
	raw    json.RawMessage
}

// badInput is an error in the history file (exit status 2).
type badInput struct {
	line int
	msg  string
}

func (e *badInput) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

// parseHistory reads the whole history; slack widens every TTL window on both sides.
func parseHistory(r io.Reader, slack time.Duration) (*history, error) {
	h := &history{byKey: map[string][]opRecord{}, start: never}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 || text[0] == '#' {
			continue
		}
		op, keep, err := parseLine(text, line, slack)
		if err != nil {
			return nil, err
		}
		h.read++
		if !keep {
			h.dropped++
			continue
		}
		if op.in.call < h.start {
			h.start = op.in.call
		}
		key := op.in.key
		if _, seen := h.byKey[key]; !seen {
			h.keys = append(h.keys, key)
		}
		h.byKey[key] = append(h.byKey[key], op)
	}
	if err := sc.Err(); err != nil {
		return nil, &badInput{line + 1, err.Error()}
	}
	sort.Strings(h.keys)
	if h.start == never {
		h.start = 0
	}
	return h, nil
}

// parseLine turns one JSON line into an operation; keep is false for a get
// that never got an answer (it may be dropped: it changed nothing).
func parseLine(text []byte, line int, slack time.Duration) (opRecord, bool, error) {
	var rec record
	bad := func(format string, a ...interface{}) (opRecord, bool, error) {
		return opRecord{}, false, &badInput{line, fmt.Sprintf(format, a...)}
	}
	if err := json.Unmarshal(text, &rec); err != nil {
		return bad("not a JSON operation: %v", err)
	}
	if rec.Key == nil {
		return bad(`missing "key"`)
	}
	if rec.Call == nil {
		return bad(`missing "call"`)
	}
	if rec.Return != nil && *rec.Return < *rec.Call {
		return bad(`"return" %d is before "call" %d`, *rec.Return, *rec.Call)
	}
	client := 0
	if rec.Client != nil {
		if *rec.Client < 0 {
			return bad(`"client" must be >= 0`)
		}
		client = *rec.Client
	}
	result, isString, err := parseResult(rec.Result)
	if err != nil {
		return bad("%v", err)
	}
	unknown := rec.Return == nil || (isString && (result == "unknown" || result == "error"))
	in := regInput{key: *rec.Key, call: *rec.Call, ret: never}
	if !unknown {
		in.ret = *rec.Return
	}
	out := regOutput{kind: outUnknown}
	switch rec.Op {
	case "get":
		in.kind = opGet
		if unknown {
			return opRecord{}, false, nil
		}
		if !rec.Result.set {
			return bad(`a completed get needs "result" (a string, or null for a miss)`)
		}
		out = regOutput{kind: outMiss}
		if isString {
			out = regOutput{kind: outValue, value: result}
		}
	case "set":
		in.kind = opSet
		if rec.Value == nil {
			return bad(`set needs a string "value"`)
		}
		in.value = *rec.Value
		ttl := int64(0)
		if rec.TTL != nil {
			ttl = *rec.TTL
		}
		if ttl < 0 || ttl > maxRelativeTTL {
			return bad(`"ttl" %d outside 0..%d (relative seconds; 0 = never expires)`, ttl, maxRelativeTTL)
		}
		in.ttl = ttl
		in.expEarliest, in.expLatest = expiryWindow(in.call, in.ret, ttl, slack)
		if !unknown {
			if !isString || result != "ok" {
				return bad(`set "result" must be "ok", "unknown" or "error"`)
			}
			out = regOutput{kind: outOK}
		}
	case "delete":
		in.kind = opDelete
		if !unknown {
			switch {
			case isString && result == "ok":
				out = regOutput{kind: outOK}
			case isString && result == "not_found":
				out = regOutput{kind: outNotFound}
			default:
				return bad(`delete "result" must be "ok", "not_found", "unknown" or "error"`)
			}
		}
	default:
		return bad(`"op" must be "get", "set" or "delete", not %q`, rec.Op)
	}
	raw := make(json.RawMessage, len(text))
	copy(raw, text)
	return opRecord{line: line, client: client, in: in, out: out, raw: raw}, true, nil
}

// parseResult: a JSON string, null, or absent (nil raw).
func parseResult(p present) (string, bool, error) {
	if !p.set || string(p.raw) == "null" {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(p.raw, &s); err != nil {
		return "", false, fmt.Errorf(`"result" must be a string or null`)
	}
	return s, true, nil
}

// expiryWindow is the real-time interval in which an item stored by a set
// with interval [call, ret] and the given ttl may expire. memcached counts
// time in whole seconds (a timer updates its clock once a second), so the item
// expires somewhere in [call + ttl - 1 s, ret + ttl + 1 s]; slack widens that on
// both sides for timer jitter. A set whose outcome is unknown (ret = never)
// may take effect arbitrarily late, so its item may live for ever.
func expiryWindow(call, ret, ttl int64, slack time.Duration) (int64, int64) {
	if ttl == 0 {
		return never, never
	}
	d := ttl * int64(time.Second)
	earliest := call + d - int64(time.Second) - int64(slack)
	latest := never
	if ret != never {
		latest = ret + d + int64(time.Second) + int64(slack)
	}
	return earliest, latest
}
