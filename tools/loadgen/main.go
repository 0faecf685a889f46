// Command p4cache-loadgen is an open-loop memcached load generator: GETs and
// SETs over UDP (memcached's UDP frame) or pipelined TCP, sent on a schedule
// whatever the replies do, at one rate or a sequence of rate steps, with
// latency histograms by who answered (the switch's replies carry UDP
// checksum 0, memcached's do not). It prints a JSON report (see
// docs/loadgen.md) and a summary on stderr.
//
// Exit status: 0 done (also when interrupted: the report is partial), 1 the
// run failed, 2 bad arguments.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const usage = `usage: p4cache-loadgen --server IP:PORT[,IP:PORT...] [--proto udp|tcp]
       (--rate R | --rates R1,R2,...) [--step D] [--warmup D] [--preload] [flags]`

type config struct {
	servers        []netip.AddrPort
	proto          string
	conns          int
	rates          []float64
	step           time.Duration
	warmup         time.Duration
	duration       time.Duration
	poisson        bool
	keys           int
	keySize        int
	keyFormat      string
	valueSize      int
	zipf           float64
	getPct         float64
	timeout        time.Duration
	maxOutstanding int
	classify       bool
	preload        bool
	seed           int64
	bind           net.IP
	jsonPath       string
}

type runner struct {
	cfg      *config
	base     time.Time
	ks       *keyspace
	zipf     *Zipf
	servers  []netip.AddrPort
	steps    []stepPlan
	stop     chan struct{}
	stopOnce sync.Once
	stopped  atomic.Bool
	stopAt   atomic.Int64
	reason   atomic.Value // string
	recvDone atomic.Bool
}

func (r *runner) now() int64 { return int64(time.Since(r.base)) }

func (r *runner) halt(reason string) {
	r.stopOnce.Do(func() {
		r.reason.Store(reason)
		r.stopAt.Store(r.now())
		r.stopped.Store(true)
		close(r.stop)
	})
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type serverList []netip.AddrPort

func (s *serverList) String() string {
	var parts []string
	for _, a := range *s {
		parts = append(parts, a.String())
	}
	return strings.Join(parts, ",")
}

func (s *serverList) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		ap, err := netip.ParseAddrPort(part)
		if err != nil || !ap.Addr().Is4() || ap.Port() == 0 {
			return fmt.Errorf("%q is not an IPv4 address:port", part)
		}
		*s = append(*s, ap)
	}
	return nil
}

func parseRates(v string) ([]float64, error) {
	var out []float64
	for _, part := range strings.Split(v, ",") {
		f, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil || !(f > 0) || f > 1e8 {
			return nil, fmt.Errorf("rate %q: want a number of requests a second in (0, 1e8]", part)
		}
		out = append(out, f)
	}
	return out, nil
}

func parseArgs(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("p4cache-loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var servers serverList
	cfg := &config{}
	fs.Var(&servers, "server", "memcached IP:PORT (repeatable, or a comma list); keys are spread by the hash ring of p4cache.ring")
	fs.StringVar(&cfg.proto, "proto", "udp", "udp (memcached's UDP frame) or tcp (pipelined ASCII)")
	fs.IntVar(&cfg.conns, "conns", 4, "sender goroutines, each with its own socket (per server for tcp) and rate/conns of the rate")
	rate := fs.Float64("rate", 0, "requests a second (one step); or --rates")
	rates := fs.String("rates", "", "comma list of requests a second, one step each")
	fs.DurationVar(&cfg.step, "step", 5*time.Second, "how long each rate is held")
	fs.DurationVar(&cfg.warmup, "warmup", 500*time.Millisecond, "start of each step left out of its figures")
	fs.DurationVar(&cfg.duration, "duration", 0, "hard cap on the whole run (preload and steps), 0: none")
	arrival := fs.String("arrival", "fixed", "send schedule: fixed (even intervals) or poisson (exponential gaps)")
	fs.IntVar(&cfg.keys, "keys", 10000, "number of keys (ranks 1..N)")
	fs.IntVar(&cfg.keySize, "key-size", 16, "key length in bytes")
	fs.StringVar(&cfg.keyFormat, "key-format", formatCachelab, "cachelab (k<rank> padded with '_', p4cache_bench.cachelab.key_of) or padded (k + zero-padded rank)")
	fs.IntVar(&cfg.valueSize, "value-size", 100, "SET value length in bytes (cachelab.value_of's text: v<rank>- padded with 'x')")
	fs.Float64Var(&cfg.zipf, "zipf", 0.99, "Zipf skew s >= 0 of the key ranks (0: uniform)")
	fs.Float64Var(&cfg.getPct, "get", 95, "percentage of GETs (the rest are SETs)")
	fs.DurationVar(&cfg.timeout, "timeout", time.Second, "a request without a reply after this long is lost")
	fs.IntVar(&cfg.maxOutstanding, "max-outstanding", 65536, "outstanding requests per socket or connection (UDP: at most 65536, the request id space)")
	classify := fs.String("classify", "auto", "udp: read replies through a raw socket to see the UDP checksum (true, false; auto: true for udp)")
	fs.BoolVar(&cfg.preload, "preload", false, "first store every key once over TCP (value of --value-size)")
	fs.Int64Var(&cfg.seed, "seed", 1, "random seed (keys, GET/SET choice, Poisson gaps)")
	bind := fs.String("bind", "", "source IPv4 address of the sockets (default: any)")
	fs.StringVar(&cfg.jsonPath, "json", "-", "write the JSON report to this file (-: stdout)")
	fs.Usage = func() { fmt.Fprintln(stderr, usage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() != 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg.servers = servers
	if len(cfg.servers) == 0 {
		return nil, errors.New("--server is required")
	}
	if len(cfg.servers) > 255 {
		return nil, errors.New("at most 255 servers")
	}
	if cfg.proto != "udp" && cfg.proto != "tcp" {
		return nil, fmt.Errorf("--proto %q: want udp or tcp", cfg.proto)
	}
	switch {
	case *rate != 0 && *rates != "":
		return nil, errors.New("give --rate or --rates, not both")
	case *rates != "":
		rs, err := parseRates(*rates)
		if err != nil {
			return nil, err
		}
		cfg.rates = rs
	case *rate != 0:
		if !(*rate > 0) || *rate > 1e8 {
			return nil, fmt.Errorf("--rate %v: want (0, 1e8]", *rate)
		}
		cfg.rates = []float64{*rate}
	case !cfg.preload:
		return nil, errors.New("nothing to do: give --rate, --rates or --preload")
	}
	if len(cfg.rates) > 1000 {
		return nil, errors.New("at most 1000 steps")
	}
	if cfg.conns < 1 || cfg.conns > 1024 {
		return nil, fmt.Errorf("--conns %d: want 1..1024", cfg.conns)
	}
	if cfg.step <= 0 || cfg.step > time.Hour {
		return nil, fmt.Errorf("--step %v: want (0, 1h]", cfg.step)
	}
	if cfg.warmup < 0 || cfg.warmup >= cfg.step {
		return nil, fmt.Errorf("--warmup %v: want >= 0 and shorter than --step %v", cfg.warmup, cfg.step)
	}
	if cfg.duration < 0 {
		return nil, errors.New("--duration must be >= 0")
	}
	switch *arrival {
	case "fixed":
	case "poisson":
		cfg.poisson = true
	default:
		return nil, fmt.Errorf("--arrival %q: want fixed or poisson", *arrival)
	}
	if cfg.keys < 1 || cfg.keys > maxZipfKeys {
		return nil, fmt.Errorf("--keys %d: want 1..%d", cfg.keys, maxZipfKeys)
	}
	if cfg.keySize < 2 || cfg.keySize > 250 {
		return nil, fmt.Errorf("--key-size %d: want 2..250", cfg.keySize)
	}
	if cfg.valueSize < 1 || cfg.valueSize > 1<<20 {
		return nil, fmt.Errorf("--value-size %d: want 1..1048576", cfg.valueSize)
	}
	if cfg.getPct < 0 || cfg.getPct > 100 {
		return nil, fmt.Errorf("--get %v: want 0..100", cfg.getPct)
	}
	if cfg.timeout < time.Millisecond || cfg.timeout > time.Minute {
		return nil, fmt.Errorf("--timeout %v: want 1ms..1m", cfg.timeout)
	}
	if cfg.maxOutstanding < 1 || cfg.maxOutstanding > 1<<20 ||
		(cfg.proto == "udp" && cfg.maxOutstanding > 1<<16) {
		return nil, fmt.Errorf("--max-outstanding %d: want 1..65536 for udp, ..1048576 for tcp", cfg.maxOutstanding)
	}
	switch *classify {
	case "auto":
		cfg.classify = cfg.proto == "udp"
	case "true", "1":
		cfg.classify = true
	case "false", "0":
	default:
		return nil, fmt.Errorf("--classify %q: want true, false or auto", *classify)
	}
	if cfg.proto == "tcp" {
		cfg.classify = false // TCP replies are all memcached's
	}
	if *bind != "" {
		ip := net.ParseIP(*bind)
		if ip == nil || ip.To4() == nil {
			return nil, fmt.Errorf("--bind %q: not an IPv4 address", *bind)
		}
		cfg.bind = ip
	}
	return cfg, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseArgs(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "p4cache-loadgen: %v\n%s\n", err, usage)
		}
		return 2
	}
	ks, err := newKeyspace(cfg.keys, cfg.keySize, cfg.keyFormat, cfg.valueSize, cfg.servers)
	if err != nil {
		fmt.Fprintf(stderr, "p4cache-loadgen: %v\n", err)
		return 2
	}
	if cfg.proto == "udp" && cfg.getPct < 100 && cfg.valueSize+cfg.keySize+40 > 1400 {
		fmt.Fprintln(stderr, "p4cache-loadgen: --value-size too large for a one-datagram UDP SET (memcached takes one datagram a request)")
		return 2
	}
	z, err := NewZipf(cfg.keys, cfg.zipf)
	if err != nil {
		fmt.Fprintf(stderr, "p4cache-loadgen: %v\n", err)
		return 2
	}
	r := &runner{cfg: cfg, base: time.Now(), ks: ks, zipf: z, servers: cfg.servers,
		stop: make(chan struct{})}
	r.reason.Store("")

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		n := 0
		for s := range sigs {
			n++
			if n > 1 {
				fmt.Fprintln(stderr, "p4cache-loadgen: second signal, exiting without a report")
				os.Exit(130)
			}
			fmt.Fprintf(stderr, "p4cache-loadgen: %v: stopping, the report will be partial\n", s)
			r.halt("signal " + s.String())
		}
	}()
	if cfg.duration > 0 {
		tm := time.AfterFunc(cfg.duration, func() { r.halt("duration") })
		defer tm.Stop()
	}

	rep := &report{Tool: "p4cache-loadgen", Format: 1, Config: cfg.json(), Machine: machine(),
		Steps: []stepReport{}, Errors: []string{}}
	if cfg.preload {
		p := r.preload()
		rep.Preload = &p
		fmt.Fprintf(stderr, "preload: %d of %d keys stored (%d failed) in %.2f s\n",
			p.Stored, p.Keys, p.Failed, p.Seconds)
		for _, e := range p.Errors {
			rep.Errors = append(rep.Errors, "preload: "+e)
		}
	}
	if len(cfg.rates) > 0 && !r.stopped.Load() {
		if err := r.load(rep); err != nil {
			fmt.Fprintf(stderr, "p4cache-loadgen: %v\n", err)
			rep.Errors = append(rep.Errors, err.Error())
			rep.Failed = true
		}
	}
	rep.StopReason = r.reason.Load().(string)
	rep.Interrupted = strings.HasPrefix(rep.StopReason, "signal")
	rep.ElapsedS = time.Since(r.base).Seconds()
	printSummary(stderr, rep)
	if err := writeJSON(cfg.jsonPath, stdout, rep); err != nil {
		fmt.Fprintf(stderr, "p4cache-loadgen: %v\n", err)
		return 1
	}
	if rep.Failed || (rep.Preload != nil && len(rep.Preload.Errors) > 0) {
		return 1
	}
	return 0
}

func writeJSON(path string, stdout io.Writer, rep *report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path == "-" {
		_, err = stdout.Write(b)
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// load runs the rate steps.
func (r *runner) load(rep *report) error {
	cfg := r.cfg
	var udps []*udpConn
	var tcps []*tcpSender
	defer func() {
		for _, c := range udps {
			c.close()
		}
		for _, s := range tcps {
			for _, c := range s.conns {
				c.conn.Close()
			}
		}
	}()
	// the plan must exist before the per-step tables are sized
	start := r.now() + int64(50*time.Millisecond)
	for i, rate := range cfg.rates {
		s := start + int64(i)*int64(cfg.step)
		r.steps = append(r.steps, stepPlan{rate: rate, start: s, warmupEnd: s + int64(cfg.warmup),
			end: s + int64(cfg.step)})
	}
	for i := 0; i < cfg.conns; i++ {
		if cfg.proto == "udp" {
			c, err := newUDPConn(r)
			if err != nil {
				return err
			}
			udps = append(udps, c)
			continue
		}
		s := &tcpSender{r: r, ss: make([]sendStats, len(r.steps)), added: make([]int, len(r.servers))}
		tcps = append(tcps, s)
		for srv := range r.servers {
			c, err := newTCPConn(r, srv)
			if err != nil {
				return err
			}
			s.conns = append(s.conns, c)
		}
	}
	// connections took time: move the plan so that it starts from now
	if late := r.now() + int64(20*time.Millisecond) - start; late > 0 {
		for i := range r.steps {
			r.steps[i].start += late
			r.steps[i].warmupEnd += late
			r.steps[i].end += late
		}
	}
	var recv, send sync.WaitGroup
	for i, c := range udps {
		recv.Add(1)
		go c.receive(&recv)
		send.Add(1)
		go func(i int, c *udpConn) {
			defer send.Done()
			r.schedule(i, c.ss, c.send)
		}(i, c)
	}
	for i, s := range tcps {
		for _, c := range s.conns {
			recv.Add(1)
			go c.receive(&recv)
		}
		send.Add(1)
		go func(i int, s *tcpSender) {
			defer send.Done()
			r.schedule(i, s.ss, s.send)
		}(i, s)
	}
	send.Wait()
	// the last replies: wait up to the timeout (less if everything is in)
	lingerEnd := r.now() + int64(cfg.timeout)
	for r.now() < lingerEnd && r.outstanding(udps, tcps) > 0 {
		time.Sleep(5 * time.Millisecond)
	}
	r.recvDone.Store(true)
	for _, s := range tcps {
		for _, c := range s.conns {
			c.finish()
		}
	}
	recv.Wait()

	stopAt := int64(-1)
	if r.stopped.Load() {
		stopAt = r.stopAt.Load()
	}
	for k, st := range r.steps {
		if stopAt >= 0 && stopAt <= st.start {
			break
		}
		var rs recvStats
		var ss sendStats
		for _, c := range udps {
			rs.merge(&c.rs[k])
			ss.merge(&c.ss[k])
		}
		for _, s := range tcps {
			ss.merge(&s.ss[k])
			for _, c := range s.conns {
				rs.merge(&c.rs[k])
			}
		}
		end, complete := st.end, true
		if stopAt >= 0 && stopAt < end {
			end, complete = stopAt, false
		}
		rep.Steps = append(rep.Steps, makeStepReport(k, st, end-st.warmupEnd, complete, &rs, &ss))
	}
	for _, c := range udps {
		rep.Unmatched += c.unmatched
		if c.recvErr != nil {
			rep.Errors = append(rep.Errors, fmt.Sprintf("udp port %d receive: %v", c.port, c.recvErr))
		}
	}
	for _, s := range tcps {
		for i, c := range s.conns {
			if c.err != nil {
				rep.Errors = append(rep.Errors, fmt.Sprintf("tcp %s: %v", r.servers[i], c.err))
			}
		}
	}
	return nil
}

// outstanding counts the requests still waiting for a reply.
func (r *runner) outstanding(udps []*udpConn, tcps []*tcpSender) int {
	n := 0
	for _, c := range udps {
		c.mu.Lock()
		for s := c.oldest; s < c.next; s++ {
			if sl := &c.slots[uint16(s)]; sl.seq == s && sl.pending {
				n++
			}
		}
		c.mu.Unlock()
	}
	for _, s := range tcps {
		for _, c := range s.conns {
			c.mu.Lock()
			if !c.broken {
				n += c.n
			}
			c.mu.Unlock()
		}
	}
	return n
}

func machine() map[string]any {
	host, _ := os.Hostname()
	return map[string]any{"cores": runtime.NumCPU(), "gomaxprocs": runtime.GOMAXPROCS(0),
		"os": runtime.GOOS, "arch": runtime.GOARCH, "go": runtime.Version(), "hostname": host}
}

func (c *config) json() map[string]any {
	var servers []string
	for _, s := range c.servers {
		servers = append(servers, s.String())
	}
	arrival := "fixed"
	if c.poisson {
		arrival = "poisson"
	}
	bind := ""
	if c.bind != nil {
		bind = c.bind.String()
	}
	return map[string]any{
		"servers": servers, "server_names": serverNames(c.servers), "proto": c.proto,
		"conns": c.conns, "rates": c.rates, "step_s": c.step.Seconds(),
		"warmup_s": c.warmup.Seconds(), "duration_s": c.duration.Seconds(), "arrival": arrival,
		"keys": c.keys, "key_size": c.keySize, "key_format": c.keyFormat,
		"value_size": c.valueSize, "zipf": c.zipf, "get_pct": c.getPct,
		"timeout_s": c.timeout.Seconds(), "max_outstanding": c.maxOutstanding,
		"classify": c.classify, "preload": c.preload, "seed": c.seed, "bind": bind,
	}
}
