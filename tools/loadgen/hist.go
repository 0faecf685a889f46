package main

import (
	"math"
	"math/bits"
)

// Hist is a fixed-size log-linear latency histogram in nanoseconds (HDR-style):
// values below 128 ns have a bucket each; above, every power of two is cut into
// 128 equal buckets, so a bucket is at most 1/128 of its lower bound wide and
// its midpoint is within 0.4 % of any value in it. Values are clamped to
// histMax (about 17 s); the exact minimum, maximum and sum are kept aside.
type Hist struct {
	Counts [histBuckets]int64
	N      int64
	Sum    float64
	Min    int64
	Max    int64
}

const (
	histSubBits = 7
	histSub     = 1 << histSubBits // 128 buckets per power of two
	histMaxBits = 34               // values up to 2^34-1 ns (17.2 s)
	histMax     = int64(1)<<histMaxBits - 1
	histBuckets = histSub * (histMaxBits - histSubBits + 1)
)

func histIndex(v int64) int {
	if v < histSub {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - histSubBits - 1
	return histSub*(shift+1) + int(v>>uint(shift)) - histSub
}

// histValue is the midpoint of bucket i.
func histValue(i int) int64 {
	if i < histSub {
		return int64(i)
	}
	shift := i/histSub - 1
	low := int64(histSub+i%histSub) << uint(shift)
	return low + (int64(1)<<uint(shift))/2
}

// Record adds one value (ns); negative values count as 0.
func (h *Hist) Record(v int64) {
	if v < 0 {
		v = 0
	}
	if h.N == 0 || v < h.Min {
		h.Min = v
	}
	if v > h.Max {
		h.Max = v
	}
	h.N++
	h.Sum += float64(v)
	c := v
	if c > histMax {
		c = histMax
	}
	h.Counts[histIndex(c)]++
}

// Merge adds o's values into h.
func (h *Hist) Merge(o *Hist) {
	if o.N == 0 {
		return
	}
	if h.N == 0 || o.Min < h.Min {
		h.Min = o.Min
	}
	if o.Max > h.Max {
		h.Max = o.Max
	}
	h.N += o.N
	h.Sum += o.Sum
	for i, c := range o.Counts {
		h.Counts[i] += c
	}
}

// Quantile is the nearest-rank q-quantile (0 < q <= 1) in ns, as the midpoint
// of its bucket clamped to the exact minimum and maximum; 0 when empty.
func (h *Hist) Quantile(q float64) int64 {
	if h.N == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.N)))
	if rank < 1 {
		rank = 1
	}
	var seen int64
	for i, c := range h.Counts {
		seen += c
		if seen >= rank {
			v := histValue(i)
			if v < h.Min {
				v = h.Min
			}
			if v > h.Max {
				v = h.Max
			}
			return v
		}
	}
	return h.Max
}

// Summary is what the JSON report shows of a histogram, in microseconds.
type Summary struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50_us"`
	P90   float64 `json:"p90_us"`
	P99   float64 `json:"p99_us"`
	P999  float64 `json:"p999_us"`
	Max   float64 `json:"max_us"`
	Min   float64 `json:"min_us"`
	Mean  float64 `json:"mean_us"`
}

func us(ns int64) float64 { return math.Round(float64(ns)/10) / 100 }

func (h *Hist) Summary() Summary {
	if h.N == 0 {
		return Summary{}
	}
	return Summary{
		Count: h.N,
		P50:   us(h.Quantile(0.50)),
		P90:   us(h.Quantile(0.90)),
		P99:   us(h.Quantile(0.99)),
		P999:  us(h.Quantile(0.999)),
		Max:   us(h.Max),
		Min:   us(h.Min),
		Mean:  us(int64(h.Sum / float64(h.N))),
	}
}
