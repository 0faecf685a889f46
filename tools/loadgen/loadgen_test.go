package main

import (
	"math"
	"math/rand"
	"net/netip"
	"sort"
	"testing"
)

// The top ranks' frequencies over 1e6 draws against the exact probabilities
// 1/r^s / H(n, s), for skews below, at and above 1 (and uniform).
func TestZipfFrequencies(t *testing.T) {
	const n, draws = 1000, 1_000_000
	for _, s := range []float64{0, 0.5, 0.99, 1.2} {
		z, err := NewZipf(n, s)
		if err != nil {
			t.Fatal(err)
		}
		h := 0.0
		for r := 1; r <= n; r++ {
			h += math.Pow(float64(r), -s)
		}
		counts := make([]int, n+1)
		rng := rand.New(rand.NewSource(42))
		for i := 0; i < draws; i++ {
			r := z.Sample(rng)
			if r < 1 || r > n {
				t.Fatalf("s=%v: rank %d out of 1..%d", s, r, n)
			}
			counts[r]++
		}
		for r := 1; r <= 10; r++ {
			p := math.Pow(float64(r), -s) / h
			if math.Abs(z.Prob(r)-p) > 1e-12 {
				t.Errorf("s=%v rank %d: Prob %v, want %v", s, r, z.Prob(r), p)
			}
			got := float64(counts[r]) / draws
			sd := math.Sqrt(p * (1 - p) / draws)
			if math.Abs(got-p) > 5*sd {
				t.Errorf("s=%v rank %d: frequency %.5f, want %.5f (5 sd = %.5f)", s, r, got, p, 5*sd)
			}
		}
	}
	if _, err := NewZipf(10, -1); err == nil {
		t.Error("a negative skew was accepted")
	}
}

// Percentiles of known data are within 1 % of the exact nearest-rank ones.
func TestHistPercentiles(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	var vals []int64
	var h Hist
	for i := 0; i < 200_000; i++ {
		// log-uniform from 1 us to 10 s, the range the report covers
		v := int64(math.Exp(math.Log(1e3) + rng.Float64()*(math.Log(1e10)-math.Log(1e3))))
		vals = append(vals, v)
		h.Record(v)
	}
	sort.Slice(vals, func(a, b int) bool { return vals[a] < vals[b] })
	for _, q := range []float64{0.01, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1} {
		exact := vals[int(math.Ceil(q*float64(len(vals))))-1]
		got := h.Quantile(q)
		if rel := math.Abs(float64(got-exact)) / float64(exact); rel > 0.01 {
			t.Errorf("q=%v: %d, exact %d (%.3f%% off)", q, got, exact, 100*rel)
		}
	}
	if h.Quantile(1) != vals[len(vals)-1] || h.Min != vals[0] {
		t.Error("max or min not exact")
	}
	// every value maps into a bucket whose midpoint is within 0.4 %
	for _, v := range []int64{0, 1, 127, 128, 129, 255, 256, 1000, 123456, 1e9, histMax} {
		m := histValue(histIndex(v))
		if v >= 128 && math.Abs(float64(m-v))/float64(v) > 0.004 {
			t.Errorf("value %d: bucket midpoint %d", v, m)
		}
		if v < 128 && m != v {
			t.Errorf("value %d: bucket %d", v, m)
		}
	}
	var e Hist
	e.Record(histMax * 4)
	if e.Quantile(0.5) != histMax*4 || e.Counts[histBuckets-1] != 1 {
		t.Error("a value past the range is not clamped into the last bucket")
	}
}

// Keys and values are cachelab's key_of and value_of.
func TestKeyFormats(t *testing.T) {
	ks, err := newKeyspace(100000, 16, formatCachelab, 32, nil)
	if err != nil {
		t.Fatal(err)
	}
	if k := string(ks.appendKey(nil, 42)); k != "k42_____________" {
		t.Errorf("cachelab key %q", k)
	}
	if v := string(ks.appendValue(nil, 42)); v != "v42-xxxxxxxxxxxxxxxxxxxxxxxxxxxx" {
		t.Errorf("cachelab value %q", v)
	}
	ks, _ = newKeyspace(100000, 16, formatPadded, 100, nil)
	if k := string(ks.appendKey(nil, 42)); k != "k000000000000042" {
		t.Errorf("padded key %q", k)
	}
	if _, err := newKeyspace(1000, 3, formatCachelab, 100, nil); err == nil {
		t.Error("a key longer than --key-size was accepted")
	}
}

// The ring agrees with p4cache.ring.HashRing (values computed with it).
func TestRingMatchesPython(t *testing.T) {
	servers := []netip.AddrPort{netip.MustParseAddrPort("10.0.0.1:11211"),
		netip.MustParseAddrPort("10.0.0.2:11211"), netip.MustParseAddrPort("10.0.0.3:11211")}
	r := newRing(servers)
	for key, want := range ringExpect {
		if got := serverNames(servers)[r.owner([]byte(key))]; got != want {
			t.Errorf("key %q: %s, want %s", key, got, want)
		}
	}
}
