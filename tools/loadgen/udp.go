package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"
)

// slot is one outstanding UDP request, indexed by its 16-bit request id.
type slot struct {
	seq     uint64 // the request's sequence number on its socket (id = seq mod 2^16)
	sched   int64
	sent    int64
	step    int32
	server  uint16
	got     uint16 // datagrams of the reply received
	class   uint8
	kind    uint8
	pending bool
}

// udpConn is one sender: a UDP socket bound to an ephemeral port, the table
// of its outstanding requests, and its receiver (the raw socket's copy of the
// replies to that port with --classify, else the socket itself).
type udpConn struct {
	r      *runner
	sock   *net.UDPConn
	port   uint16
	rawFD  int
	mu     sync.Mutex
	slots  []slot
	next   uint64 // next sequence number to send (under mu)
	oldest uint64 // the sweep's position (under mu)
	rs     []recvStats
	ss     []sendStats
	// under mu: replies matching no outstanding request (late, duplicate, or
	// not from the request's server)
	unmatched int64
	recvErr   error
	pkt       []byte
}

func newUDPConn(r *runner) (*udpConn, error) {
	sock, err := net.ListenUDP("udp4", &net.UDPAddr{IP: r.cfg.bind})
	if err != nil {
		return nil, fmt.Errorf("udp socket: %w", err)
	}
	c := &udpConn{r: r, sock: sock, rawFD: -1, slots: make([]slot, 1<<16),
		rs: make([]recvStats, len(r.steps)), ss: make([]sendStats, len(r.steps))}
	c.port = uint16(sock.LocalAddr().(*net.UDPAddr).Port)
	_ = sock.SetWriteBuffer(1 << 20)
	if r.cfg.classify {
		// The raw socket reads the replies; this socket only keeps the port
		// bound (no ICMP port unreachable). Its small buffer fills and the
		// kernel drops the rest there, which costs no more than a lookup.
		_ = sock.SetReadBuffer(4096)
		fd, err := openRaw(c.port, r.servers)
		if err != nil {
			sock.Close()
			return nil, err
		}
		c.rawFD = fd
	} else {
		_ = sock.SetReadBuffer(8 << 20)
	}
	return c, nil
}

func (c *udpConn) close() {
	c.sock.Close()
	if c.rawFD >= 0 {
		syscall.Close(c.rawFD)
	}
}

// openRaw opens an AF_INET raw socket for UDP with a classic BPF filter that
// keeps only datagrams to port from one of the servers' ports: the kernel
// hands a raw socket a copy of every UDP datagram delivered locally (headers
// included, so the UDP checksum is seen), the filter drops the others before
// they are queued.
func openRaw(port uint16, servers []netip.AddrPort) (int, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.IPPROTO_UDP)
	if err != nil {
		return -1, fmt.Errorf("raw socket for --classify (needs root or CAP_NET_RAW; "+
			"--classify=false reads the UDP socket and cannot tell switch replies): %w", err)
	}
	ports := map[uint16]bool{}
	var sports []uint16
	for _, s := range servers {
		if !ports[s.Port()] {
			ports[s.Port()] = true
			sports = append(sports, s.Port())
		}
	}
	// x = IP header length; A = UDP dport; == port? A = sport; in sports?
	n := len(sports)
	prog := []syscall.SockFilter{
		*syscall.LsfStmt(syscall.BPF_LDX|syscall.BPF_B|syscall.BPF_MSH, 0),
		*syscall.LsfStmt(syscall.BPF_LD|syscall.BPF_H|syscall.BPF_IND, 2),
		*syscall.LsfJump(syscall.BPF_JMP|syscall.BPF_JEQ|syscall.BPF_K, int(port), 0, n+1),
		*syscall.LsfStmt(syscall.BPF_LD|syscall.BPF_H|syscall.BPF_IND, 0),
	}
	for i, sp := range sports {
		// true: jump to accept (after the remaining tests and the reject)
		prog = append(prog, *syscall.LsfJump(syscall.BPF_JMP|syscall.BPF_JEQ|syscall.BPF_K,
			int(sp), n-i, 0))
	}
	prog = append(prog, *syscall.LsfStmt(syscall.BPF_RET|syscall.BPF_K, 0),
		*syscall.LsfStmt(syscall.BPF_RET|syscall.BPF_K, 0xffff))
	if err := syscall.AttachLsf(fd, prog); err != nil {
		syscall.Close(fd)
		return -1, fmt.Errorf("raw socket filter: %w", err)
	}
	if syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, 16<<20) != nil {
		_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<20)
	}
	tv := syscall.Timeval{Usec: 10000}
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

// appendCommand appends the ASCII command for q.
func (r *runner) appendCommand(b []byte, q *request) []byte {
	if q.get {
		b = append(b, "get "...)
		b = r.ks.appendKey(b, q.rank)
		return append(b, '\r', '\n')
	}
	b = append(b, "set "...)
	b = r.ks.appendKey(b, q.rank)
	b = append(b, " 0 0 "...)
	b = appendInt(b, r.ks.valSize)
	b = append(b, '\r', '\n')
	b = r.ks.appendValue(b, q.rank)
	return append(b, '\r', '\n')
}

func appendInt(b []byte, v int) []byte {
	var tmp [20]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return append(b, tmp[i:]...)
}

func (c *udpConn) send(batch []request) {
	r := c.r
	timeout := int64(r.cfg.timeout)
	for i := range batch {
		q := &batch[i]
		srv := r.ks.server(q.rank)
		c.mu.Lock()
		seq := c.next
		s := &c.slots[uint16(seq)]
		if s.pending {
			if r.now()-s.sent <= timeout {
				c.mu.Unlock()
				if q.step >= 0 {
					c.ss[q.step].skipped++
				}
				continue
			}
			if s.step >= 0 {
				c.rs[s.step].timeouts++
			}
			s.pending = false
		}
		c.next++
		now := r.now()
		*s = slot{seq: seq, sched: q.sched, sent: now, step: q.step, server: uint16(srv),
			kind: kindOther, pending: true}
		c.mu.Unlock()

		p := c.pkt[:0]
		p = binary.BigEndian.AppendUint16(p, uint16(seq))
		p = append(p, 0, 0, 0, 1, 0, 0)
		p = r.appendCommand(p, q)
		c.pkt = p
		_, err := c.sock.WriteToUDPAddrPort(p, r.servers[srv])
		if q.step < 0 {
			continue
		}
		st := &c.ss[q.step]
		if err != nil {
			c.mu.Lock()
			if s.seq == seq {
				s.pending = false
			}
			c.mu.Unlock()
			st.sendErrors++
			continue
		}
		st.sent++
		if q.get {
			st.gets++
		} else {
			st.sets++
		}
		st.lag.Record(now - q.sched)
	}
}

// reply matches one reply datagram to its request by id.
func (c *udpConn) reply(id, seqno, total uint16, class int, body []byte, from netip.AddrPort, t int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &c.slots[id]
	if !s.pending || c.r.servers[s.server] != from {
		c.unmatched++
		return
	}
	if s.got == 0 {
		s.class = uint8(class)
	}
	if seqno == 0 {
		s.kind = uint8(classifyReply(body))
	}
	s.got++
	if total == 0 {
		total = 1
	}
	if s.got < total {
		return
	}
	s.pending = false
	if s.step < 0 {
		return
	}
	if t-s.sent > int64(c.r.cfg.timeout) {
		c.rs[s.step].timeouts++
		return
	}
	c.rs[s.step].reply(int(s.class), int(s.kind), t-s.sched, t-s.sent)
}

// sweep counts requests older than the timeout as lost, oldest first; force:
// every outstanding one (the end of the run).
func (c *udpConn) sweep(now int64, force bool) {
	timeout := int64(c.r.cfg.timeout)
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.oldest < c.next {
		s := &c.slots[uint16(c.oldest)]
		if s.seq == c.oldest && s.pending {
			if !force && now-s.sent <= timeout {
				return
			}
			s.pending = false
			if s.step >= 0 {
				c.rs[s.step].timeouts++
			}
		}
		c.oldest++
	}
}

const sweepEvery = int64(5 * time.Millisecond)

// receive reads replies until the run's receivers are told to finish.
func (c *udpConn) receive(wg *sync.WaitGroup) {
	defer wg.Done()
	if c.rawFD >= 0 {
		c.receiveRaw()
	} else {
		c.receiveSock()
	}
	c.sweep(0, true)
}

func (c *udpConn) receiveRaw() {
	buf := make([]byte, 65536)
	lastSweep := int64(0)
	for !c.r.recvDone.Load() {
		n, err := syscall.Read(c.rawFD, buf)
		t := c.r.now()
		if t-lastSweep > sweepEvery {
			c.sweep(t, false)
			lastSweep = t
		}
		if err != nil {
			if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
				continue
			}
			c.mu.Lock()
			c.recvErr = err
			c.mu.Unlock()
			return
		}
		if n < 20 {
			continue
		}
		ihl := int(buf[0]&0x0f) * 4
		if n < ihl+16 {
			continue
		}
		u := buf[ihl:n]
		sport := binary.BigEndian.Uint16(u[0:])
		dport := binary.BigEndian.Uint16(u[2:])
		if dport != c.port {
			continue
		}
		class := classMemcached
		if binary.BigEndian.Uint16(u[6:]) == 0 {
			class = classSwitch
		}
		from := netip.AddrPortFrom(netip.AddrFrom4([4]byte{buf[12], buf[13], buf[14], buf[15]}), sport)
		f := u[8:]
		c.reply(binary.BigEndian.Uint16(f[0:]), binary.BigEndian.Uint16(f[2:]),
			binary.BigEndian.Uint16(f[4:]), class, f[8:], from, t)
	}
}

func (c *udpConn) receiveSock() {
	buf := make([]byte, 65536)
	lastSweep := int64(0)
	for !c.r.recvDone.Load() {
		_ = c.sock.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		n, from, err := c.sock.ReadFromUDPAddrPort(buf)
		t := c.r.now()
		if t-lastSweep > sweepEvery {
			c.sweep(t, false)
			lastSweep = t
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if c.r.recvDone.Load() {
				return
			}
			c.mu.Lock()
			c.recvErr = err
			c.mu.Unlock()
			return
		}
		if n < 8 {
			continue
		}
		f := buf[:n]
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		c.reply(binary.BigEndian.Uint16(f[0:]), binary.BigEndian.Uint16(f[2:]),
			binary.BigEndian.Uint16(f[4:]), classUnknown, f[8:], from, t)
	}
}
