package main

import (
	"bufio"
	"fmt"
	"net"
	"sync"
	"time"
)

// preloadResult is what --preload reports.
type preloadResult struct {
	Keys    int      `json:"keys"`
	Stored  int64    `json:"stored"`
	Failed  int64    `json:"failed"`
	Seconds float64  `json:"seconds"`
	Errors  []string `json:"errors"`
}

// preload stores every rank once over TCP, on its server, pipelined: a writer
// sends the sets, a reader counts the replies.
func (r *runner) preload() preloadResult {
	t0 := time.Now()
	res := preloadResult{Keys: r.ks.n, Errors: []string{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for srv := range r.servers {
		var ranks []int
		for k := 1; k <= r.ks.n; k++ {
			if r.ks.server(k) == srv {
				ranks = append(ranks, k)
			}
		}
		if len(ranks) == 0 {
			continue
		}
		wg.Add(1)
		go func(srv int, ranks []int) {
			defer wg.Done()
			stored, failed, err := r.preloadServer(srv, ranks)
			mu.Lock()
			defer mu.Unlock()
			res.Stored += stored
			res.Failed += failed
			if err != nil {
				res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", r.servers[srv], err))
			}
		}(srv, ranks)
	}
	wg.Wait()
	res.Seconds = time.Since(t0).Seconds()
	return res
}

func (r *runner) preloadServer(srv int, ranks []int) (stored, failed int64, err error) {
	conn, err := net.DialTimeout("tcp4", r.servers[srv].String(), 5*time.Second)
	if err != nil {
		return 0, int64(len(ranks)), err
	}
	defer conn.Close()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-r.stop:
			conn.Close()
		case <-done:
		}
	}()
	werr := make(chan error, 1)
	go func() {
		var buf []byte
		for i, k := range ranks {
			if r.stopped.Load() {
				werr <- fmt.Errorf("interrupted")
				return
			}
			buf = r.appendCommand(buf, &request{rank: k})
			if len(buf) > 64<<10 || i == len(ranks)-1 {
				if _, err := conn.Write(buf); err != nil {
					werr <- err
					return
				}
				buf = buf[:0]
			}
		}
		werr <- nil
	}()
	rd := bufio.NewReaderSize(conn, 64<<10)
	for i := range ranks {
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		kind, err := readReply(rd)
		if err != nil {
			return stored, int64(len(ranks) - i), err
		}
		if kind == kindStored {
			stored++
		} else {
			failed++
		}
	}
	return stored, failed, <-werr
}
