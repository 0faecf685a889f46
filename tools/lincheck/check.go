package main

// Checking: every key on its own with porcupine, a few keys at a time.

import (
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// keyResult is the outcome for one key.
type keyResult struct {
	Key        string `json:"-"`
	Result     string `json:"result"` // "ok", "illegal", "timeout"
	Operations int    `json:"operations"`
	Millis     int64  `json:"ms"`
	info       porcupine.LinearizationInfo
	ops        []porcupine.Operation
}

// options of one run.
type options struct {
	timeout time.Duration // for the whole run; 0 = none
	jobs    int
}

// toOperations turns a key's records into porcupine operations; Metadata is the line.
func toOperations(recs []opRecord) []porcupine.Operation {
	ops := make([]porcupine.Operation, len(recs))
	for i, r := range recs {
		ops[i] = porcupine.Operation{
			ClientId: r.client, Input: r.in, Call: r.in.call,
			Output: r.out, Return: r.in.ret, Metadata: r.line,
		}
	}
	return ops
}

// checkAll checks every key of h, jobs keys at a time, within the overall timeout.
func checkAll(h *history, model porcupine.Model, opt options) []keyResult {
	var deadline time.Time
	if opt.timeout > 0 {
		deadline = time.Now().Add(opt.timeout)
	}
	results := make([]keyResult, len(h.keys))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < opt.jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = checkKey(h.keys[i], h.byKey[h.keys[i]], model, deadline)
			}
		}()
	}
	// biggest keys first, so one long key does not start last
	order := make([]int, len(h.keys))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		return len(h.byKey[h.keys[order[a]]]) > len(h.byKey[h.keys[order[b]]])
	})
	for _, i := range order {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

func checkKey(key string, recs []opRecord, model porcupine.Model, deadline time.Time) keyResult {
	res := keyResult{Key: key, Operations: len(recs), ops: toOperations(recs)}
	var budget time.Duration // 0: porcupine waits for ever
	if !deadline.IsZero() {
		budget = time.Until(deadline)
		if budget <= 0 {
			res.Result = "timeout"
			return res
		}
	}
	begin := time.Now()
	verdict, info := porcupine.CheckOperationsVerbose(model, res.ops, budget)
	res.Millis = time.Since(begin).Milliseconds()
	res.info = info
	switch verdict {
	case porcupine.Ok:
		res.Result = "ok"
	case porcupine.Illegal:
		res.Result = "illegal"
	default:
		res.Result = "timeout"
	}
	return res
}

// violation describes a key that is not linearizable: the operations that
// could not be linearized next after the longest linearizable prefix porcupine
// found (those concurrent with the first of the rest to return), and the last
// operations of that prefix with the model state it leaves.
type violation struct {
	Key     string            `json:"key"`
	Ops     []json.RawMessage `json:"ops"`
	Context []json.RawMessage `json:"context"`
	State   string            `json:"state"`
	Viz     string            `json:"viz,omitempty"`
}

const contextOps = 6

func explain(r keyResult, recs []opRecord, start int64) violation {
	v := violation{Key: r.Key, Ops: []json.RawMessage{}, Context: []json.RawMessage{}}
	var prefix []int
	for _, partition := range r.info.PartialLinearizations() {
		for _, seq := range partition {
			if len(seq) > len(prefix) {
				prefix = seq
			}
		}
	}
	state := absent
	done := make([]bool, len(recs))
	for _, id := range prefix {
		done[id] = true
		_, state = step(state, recs[id].in, recs[id].out)
	}
	v.State = describeState(state, start)
	from := len(prefix) - contextOps
	if from < 0 {
		from = 0
	}
	for _, id := range prefix[from:] {
		v.Context = append(v.Context, withLine(recs[id]))
	}
	firstReturn := never
	for i, rec := range recs {
		if !done[i] && rec.in.ret < firstReturn {
			firstReturn = rec.in.ret
		}
	}
	var stuck []int
	for i, rec := range recs {
		if !done[i] && rec.in.call <= firstReturn {
			stuck = append(stuck, i)
		}
	}
	sort.Slice(stuck, func(a, b int) bool { return recs[stuck[a]].in.call < recs[stuck[b]].in.call })
	for _, i := range stuck {
		v.Ops = append(v.Ops, withLine(recs[i]))
	}
	return v
}

// withLine is the operation as written in the history, plus its line number.
func withLine(rec opRecord) json.RawMessage {
	var m map[string]interface{}
	if err := json.Unmarshal(rec.raw, &m); err != nil {
		return rec.raw
	}
	m["line"] = rec.line
	b, err := json.Marshal(m)
	if err != nil {
		return rec.raw
	}
	return b
}
