package main

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
)

// Key formats (rank r counts from 1):
//
//	cachelab  "k<r>" padded on the right with '_' to --key-size bytes, exactly
//	          p4cache_bench.cachelab.key_of when --key-size is 16 (a rank
//	          whose "k<r>" is longer than --key-size is refused);
//	padded    "k" then r in decimal, zero-padded to --key-size bytes.
//
// Values are cachelab's value_of at --value-size bytes: "v<r>-" padded with
// 'x' (value_of itself is 32 bytes).
const (
	formatCachelab = "cachelab"
	formatPadded   = "padded"
)

type keyspace struct {
	n       int
	size    int
	format  string
	valSize int
	owner   []uint8 // server index per rank (nil: one server)
}

func newKeyspace(n, size int, format string, valSize int, servers []netip.AddrPort) (*keyspace, error) {
	if format != formatCachelab && format != formatPadded {
		return nil, fmt.Errorf("--key-format %q: want %s or %s", format, formatCachelab, formatPadded)
	}
	ks := &keyspace{n: n, size: size, format: format, valSize: valSize}
	if long := len(ks.appendKey(nil, n)); long > 250 || long > size {
		return nil, fmt.Errorf("key of rank %d is %d bytes, more than --key-size %d (or memcached's 250)",
			n, long, size)
	}
	if format == formatCachelab && len(fmt.Sprintf("v%d-", n)) > valSize {
		return nil, fmt.Errorf("--value-size %d cannot hold \"v%d-\"", valSize, n)
	}
	if len(servers) > 1 {
		ring := newRing(servers)
		ks.owner = make([]uint8, n+1)
		var buf []byte
		for r := 1; r <= n; r++ {
			buf = ks.appendKey(buf[:0], r)
			ks.owner[r] = uint8(ring.owner(buf))
		}
	}
	return ks, nil
}

func (ks *keyspace) appendKey(b []byte, r int) []byte {
	start := len(b)
	if ks.format == formatPadded {
		b = append(b, 'k')
		digits := strconv.Itoa(r)
		for i := 1 + len(digits); i < ks.size; i++ {
			b = append(b, '0')
		}
		return append(b, digits...)
	}
	b = append(b, 'k')
	b = strconv.AppendInt(b, int64(r), 10)
	for len(b)-start < ks.size {
		b = append(b, '_')
	}
	return b
}

func (ks *keyspace) appendValue(b []byte, r int) []byte {
	start := len(b)
	b = append(b, 'v')
	b = strconv.AppendInt(b, int64(r), 10)
	b = append(b, '-')
	if len(b)-start > ks.valSize { // padded keys with a tiny value size: cut
		b = b[:start+ks.valSize]
	}
	for len(b)-start < ks.valSize {
		b = append(b, 'x')
	}
	return b
}

func (ks *keyspace) server(r int) int {
	if ks.owner == nil {
		return 0
	}
	return int(ks.owner[r])
}

// ring is p4cache.ring.HashRing (Ketama): 160 points per server, four per
// MD5("<name>-<i>") read little-endian; a key's point is the first four bytes
// of MD5(key) little-endian; its owner is the server of the first point at or
// after it, wrapping. A server's name is its IP address as the Python clients
// name servers; when two servers share an address, "ip:port" instead.
type ring struct {
	points []uint32
	owners []int
}

func serverNames(servers []netip.AddrPort) []string {
	seen := map[netip.Addr]int{}
	for _, s := range servers {
		seen[s.Addr()]++
	}
	names := make([]string, len(servers))
	for i, s := range servers {
		if seen[s.Addr()] > 1 {
			names[i] = s.String()
		} else {
			names[i] = s.Addr().String()
		}
	}
	return names
}

func newRing(servers []netip.AddrPort) *ring {
	const vnodes = 160
	names := serverNames(servers)
	type pt struct {
		p    uint32
		name string
		idx  int
	}
	var pts []pt
	for idx, name := range names {
		for i := 0; i < vnodes/4; i++ {
			d := md5.Sum([]byte(fmt.Sprintf("%s-%d", name, i)))
			for j := 0; j < 4; j++ {
				pts = append(pts, pt{binary.LittleEndian.Uint32(d[4*j:]), name, idx})
			}
		}
	}
	sort.Slice(pts, func(a, b int) bool {
		if pts[a].p != pts[b].p {
			return pts[a].p < pts[b].p
		}
		return pts[a].name < pts[b].name
	})
	r := &ring{}
	for _, p := range pts {
		r.points = append(r.points, p.p)
		r.owners = append(r.owners, p.idx)
	}
	return r
}

func (r *ring) owner(key []byte) int {
	d := md5.Sum(key)
	kp := binary.LittleEndian.Uint32(d[:4])
	i := sort.Search(len(r.points), func(i int) bool { return r.points[i] >= kp })
	if i == len(r.points) {
		i = 0
	}
	return r.owners[i]
}
