package main

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
)

// maxZipfKeys bounds the sampler's table (8 bytes a key).
const maxZipfKeys = 20_000_000

// Zipf draws ranks 1..n with P(r) proportional to 1/r^s, for any s >= 0
// (math/rand's Zipf needs s > 1): the cumulative distribution is computed
// once and a draw is a binary search for a uniform number in it. s = 0 is
// uniform and keeps no table.
type Zipf struct {
	n   int
	cdf []float64
}

func NewZipf(n int, s float64) (*Zipf, error) {
	if n < 1 || n > maxZipfKeys {
		return nil, fmt.Errorf("zipf: %d keys, want 1..%d", n, maxZipfKeys)
	}
	if s < 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		return nil, fmt.Errorf("zipf: skew %v, want a finite s >= 0", s)
	}
	z := &Zipf{n: n}
	if s == 0 {
		return z, nil
	}
	z.cdf = make([]float64, n)
	sum := 0.0
	for r := 1; r <= n; r++ {
		sum += math.Pow(float64(r), -s)
		z.cdf[r-1] = sum
	}
	for i := range z.cdf {
		z.cdf[i] /= sum
	}
	z.cdf[n-1] = 1
	return z, nil
}

// Prob is the exact probability of rank r.
func (z *Zipf) Prob(r int) float64 {
	if z.cdf == nil {
		return 1 / float64(z.n)
	}
	if r == 1 {
		return z.cdf[0]
	}
	return z.cdf[r-1] - z.cdf[r-2]
}

// Sample draws one rank in 1..n.
func (z *Zipf) Sample(rng *rand.Rand) int {
	if z.cdf == nil {
		return 1 + rng.Intn(z.n)
	}
	u := rng.Float64()
	i := sort.SearchFloat64s(z.cdf, u) // first i with cdf[i] >= u
	if i >= z.n {
		i = z.n - 1
	}
	return i + 1
}
