package main

import (
	"math/rand"
	"runtime"
	"syscall"
	"time"
)

// request is one scheduled operation.
type request struct {
	sched int64 // scheduled send time, ns since the run's base
	step  int32 // index of the step it belongs to; -1: warm-up (not counted)
	rank  int
	get   bool
}

// stepPlan is one rate step on the run's clock (ns since base).
type stepPlan struct {
	rate      float64
	start     int64
	warmupEnd int64
	end       int64
}

const (
	maxBatch        = 64
	prSetTimerslack = 29
)

// schedule runs sender conn's share of every step: each of cfg.conns senders
// sends rate/conns requests a second, at a fixed interval (staggered between
// senders) or with exponential gaps (--arrival poisson), whatever the replies
// do. Requests already due are handed to send in batches of up to maxBatch
// (a sender behind schedule catches up at once; their latency still counts
// from the scheduled time). It returns when the last step ends or on stop.
func (r *runner) schedule(conn int, ss []sendStats, send func(batch []request)) {
	// a thread of its own, whose nanosleeps may end 1 us late instead of the
	// default 50 us timer slack
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerslack, 1000, 0)
	rng := rand.New(rand.NewSource(r.cfg.seed + int64(conn)*7919 + 1))
	batch := make([]request, 0, maxBatch)
	conns := float64(r.cfg.conns)
	for k, st := range r.steps {
		interval := 1e9 * conns / st.rate
		gap := func() float64 {
			if r.cfg.poisson {
				return rng.ExpFloat64() * interval
			}
			return interval
		}
		t := float64(st.start) + interval*float64(conn)/conns
		if r.cfg.poisson {
			t = float64(st.start) + gap()
		}
		for t < float64(st.end) {
			if r.stopped.Load() {
				return
			}
			now := r.now()
			if due := int64(t); due > now {
				r.sleep(due - now)
				continue
			}
			batch = batch[:0]
			for t < float64(st.end) && int64(t) <= now && len(batch) < maxBatch {
				q := request{sched: int64(t), step: int32(k), rank: r.zipf.Sample(rng),
					get: r.cfg.getPct >= 100 || rng.Float64()*100 < r.cfg.getPct}
				if q.sched < st.warmupEnd {
					q.step = -1
				} else {
					ss[k].scheduled++
				}
				batch = append(batch, q)
				t += gap()
			}
			send(batch)
		}
	}
}

// sleep waits d ns, or less when the run is stopped meanwhile. Short waits
// are a nanosleep(2) of the OS thread: the Go runtime's timers wake through
// epoll_pwait, whose timeout is whole milliseconds (a 100 us sleep would
// often last 1 ms, late sends that then go out in bursts).
func (r *runner) sleep(d int64) {
	if d < int64(2*time.Millisecond) {
		ts := syscall.NsecToTimespec(d)
		_ = syscall.Nanosleep(&ts, nil)
		return
	}
	tm := time.NewTimer(time.Duration(d))
	select {
	case <-tm.C:
	case <-r.stop:
		tm.Stop()
	}
}
