package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"
)

// tcpEntry is one request waiting for its reply on a TCP connection.
type tcpEntry struct {
	sched int64
	sent  int64
	step  int32
}

// tcpConn is one pipelined ASCII-protocol connection to one server: the
// sender writes requests as they fall due, the reader matches replies in
// order against a bounded queue of outstanding requests.
type tcpConn struct {
	r      *runner
	conn   *net.TCPConn
	mu     sync.Mutex
	q      []tcpEntry // ring buffer, cap --max-outstanding
	head   int
	n      int
	broken bool
	rs     []recvStats
	err    error
	buf    []byte
}

func newTCPConn(r *runner, srv int) (*tcpConn, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	if r.cfg.bind != nil {
		d.LocalAddr = &net.TCPAddr{IP: r.cfg.bind}
	}
	conn, err := d.Dial("tcp4", r.servers[srv].String())
	if err != nil {
		return nil, fmt.Errorf("tcp connection to %s: %w", r.servers[srv], err)
	}
	tc := conn.(*net.TCPConn)
	_ = tc.SetNoDelay(true)
	return &tcpConn{r: r, conn: tc, q: make([]tcpEntry, r.cfg.maxOutstanding),
		rs: make([]recvStats, len(r.steps))}, nil
}

// tcpSender is one sender goroutine's connections, one per server.
type tcpSender struct {
	r     *runner
	conns []*tcpConn
	ss    []sendStats
	added []int // per server: entries queued in this batch
}

func (s *tcpSender) send(batch []request) {
	r := s.r
	for i := range s.added {
		s.added[i] = 0
	}
	for i := range batch {
		q := &batch[i]
		srv := r.ks.server(q.rank)
		c := s.conns[srv]
		c.mu.Lock()
		if c.broken || c.n == len(c.q) {
			broken := c.broken
			c.mu.Unlock()
			if q.step >= 0 {
				if broken {
					s.ss[q.step].sendErrors++
				} else {
					s.ss[q.step].skipped++
				}
			}
			continue
		}
		c.q[(c.head+c.n)%len(c.q)] = tcpEntry{sched: q.sched, sent: -1, step: q.step}
		c.n++
		c.mu.Unlock()
		c.buf = r.appendCommand(c.buf, q)
		s.added[srv]++
		if q.step >= 0 {
			st := &s.ss[q.step]
			if q.get {
				st.gets++
			} else {
				st.sets++
			}
		}
	}
	for srv, c := range s.conns {
		m := s.added[srv]
		if m == 0 {
			continue
		}
		now := r.now()
		c.mu.Lock()
		// this batch's entries are the last m of the queue: the reader cannot
		// have taken them, their replies are not asked for yet
		for j := c.n - m; j < c.n; j++ {
			e := &c.q[(c.head+j)%len(c.q)]
			e.sent = now
			if e.step >= 0 {
				st := &s.ss[e.step]
				st.sent++
				st.lag.Record(now - e.sched)
			}
		}
		c.mu.Unlock()
		_ = c.conn.SetWriteDeadline(time.Now().Add(r.cfg.timeout + time.Second))
		_, err := c.conn.Write(c.buf)
		c.buf = c.buf[:0]
		if err != nil {
			c.mu.Lock()
			if !c.broken {
				c.broken = true
				c.err = fmt.Errorf("write: %w", err)
			}
			c.mu.Unlock()
			c.conn.Close()
		}
	}
}

// receive reads replies in order until the connection closes.
func (c *tcpConn) receive(wg *sync.WaitGroup) {
	defer wg.Done()
	rd := bufio.NewReaderSize(c.conn, 256<<10)
	timeout := int64(c.r.cfg.timeout)
	for {
		kind, err := readReply(rd)
		t := c.r.now()
		if err != nil {
			c.mu.Lock()
			if !c.broken && !c.r.recvDone.Load() {
				c.err = fmt.Errorf("read: %w", err)
			}
			c.broken = true
			c.mu.Unlock()
			return
		}
		c.mu.Lock()
		if c.n == 0 {
			c.broken = true
			c.err = errors.New("a reply with no request outstanding")
			c.mu.Unlock()
			return
		}
		e := c.q[c.head]
		c.head = (c.head + 1) % len(c.q)
		c.n--
		if e.step >= 0 {
			if e.sent < 0 {
				e.sent = e.sched
			}
			if t-e.sent > timeout {
				c.rs[e.step].timeouts++
				c.rs[e.step].late++
			} else {
				c.rs[e.step].reply(classMemcached, kind, t-e.sched, t-e.sent)
			}
		}
		c.mu.Unlock()
	}
}

// finish closes the connection and counts what is still outstanding as lost.
func (c *tcpConn) finish() {
	c.conn.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	for ; c.n > 0; c.n-- {
		e := c.q[c.head]
		c.head = (c.head + 1) % len(c.q)
		if e.step >= 0 {
			c.rs[e.step].timeouts++
		}
	}
}

// readReply reads one whole reply of the ASCII protocol and tells its kind.
func readReply(rd *bufio.Reader) (int, error) {
	kind := -1
	for {
		line, err := rd.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if bytes.HasPrefix(line, []byte("VALUE ")) {
			f := bytes.Fields(line)
			if len(f) < 4 {
				return 0, fmt.Errorf("bad VALUE line %q", line)
			}
			n, err := strconv.Atoi(string(f[3]))
			if err != nil || n < 0 {
				return 0, fmt.Errorf("bad VALUE line %q", line)
			}
			if _, err := rd.Discard(n + 2); err != nil {
				return 0, err
			}
			kind = kindValue
			continue
		}
		if bytes.Equal(line, []byte("END\r\n")) {
			if kind < 0 {
				kind = kindMiss
			}
			return kind, nil
		}
		if kind >= 0 {
			return 0, fmt.Errorf("unexpected line in a GET reply %q", line)
		}
		return classifyReply(line), nil
	}
}
