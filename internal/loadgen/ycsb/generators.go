package ycsb

import (
	"math"
	"math/rand/v2"
	"sync"
)

// fnvHash64 is YCSB's Utils.fnvhash64: FNV-1 over the 8 little-endian bytes of v, as a
// non-negative Java long (Math.abs, which leaves math.MinInt64 as is).
func fnvHash64(v int64) int64 {
	const offset, prime = uint64(0xCBF29CE484222325), uint64(1099511628211)
	h := offset
	for range 8 {
		h ^= uint64(v & 0xff)
		v >>= 8
		h *= prime
	}
	r := int64(h)
	if r < 0 && r != math.MinInt64 {
		r = -r
	}
	return r
}

// zipfianConstant is YCSB's default (and the only value whose zeta over zipfianItems is
// precomputed).
const zipfianConstant = 0.99

// zipfianItems and zipfianZetan are ScrambledZipfianGenerator's ITEM_COUNT and ZETAN.
const (
	zipfianItems = 10_000_000_000
	zipfianZetan = 26.46902820178302
)

// zipfian is YCSB's ZipfianGenerator (Gray et al., "Quickly Generating Billion-Record Synthetic
// Databases"): item base is the most popular, then base+1, ... Not safe for concurrent use.
type zipfian struct {
	base       int64
	items      int64 // count the zeta below is for
	theta      float64
	alpha      float64
	zeta2theta float64
	zetan      float64
	eta        float64
}

func newZipfian(base, items int64, theta float64) *zipfian {
	return newZipfianZeta(base, items, theta, zeta(0, items, theta, 0))
}

func newZipfianZeta(base, items int64, theta, zetan float64) *zipfian {
	z := &zipfian{base: base, items: items, theta: theta, alpha: 1 / (1 - theta), zeta2theta: zeta(0, 2, theta, 0), zetan: zetan}
	z.eta = z.etaFor(items)
	return z
}

func (z *zipfian) etaFor(n int64) float64 {
	return (1 - math.Pow(2/float64(n), 1-z.theta)) / (1 - z.zeta2theta/z.zetan)
}

// zeta adds 1/(i+1)^theta for i in [from, to) to sum.
func zeta(from, to int64, theta, sum float64) float64 {
	for i := from; i < to; i++ {
		sum += 1 / math.Pow(float64(i+1), theta)
	}
	return sum
}

// next draws from [base, base+n) for n items; the zeta constant is extended incrementally when
// n grows (the latest distribution's key space grows with every acknowledged insert).
func (z *zipfian) next(rng *rand.Rand, n int64) int64 {
	if n > z.items {
		z.zetan = zeta(z.items, n, z.theta, z.zetan)
		z.items = n
		z.eta = z.etaFor(n)
	}
	u := rng.Float64()
	uz := u * z.zetan
	if uz < 1 {
		return z.base
	}
	if uz < 1+math.Pow(0.5, z.theta) {
		return z.base + 1
	}
	return z.base + int64(float64(n)*math.Pow(z.eta*u-z.eta+1, z.alpha))
}

// scrambledZipfian is YCSB's ScrambledZipfianGenerator: zipfian popularity, but the popular
// items are spread over [min, min+count) by hashing instead of clustered at min.
type scrambledZipfian struct {
	min, count int64
	z          *zipfian
}

func newScrambledZipfian(min, count int64) *scrambledZipfian {
	return &scrambledZipfian{min: min, count: count, z: newZipfianZeta(0, zipfianItems, zipfianConstant, zipfianZetan)}
}

func (s *scrambledZipfian) next(rng *rand.Rand) int64 {
	v := s.z.next(rng, zipfianItems)
	return s.min + fnvHash64(v)%s.count
}

// ackCounter is YCSB's AcknowledgedCounterGenerator: it hands out insert key numbers in order,
// and last() is the highest number below which every insert has been acknowledged, so readers
// never pick a key still being inserted. Safe for concurrent use.
type ackCounter struct {
	mu      sync.Mutex
	next    int64
	limit   int64 // every key number <= limit is acknowledged
	pending map[int64]bool
}

func newAckCounter(start int64) *ackCounter {
	return &ackCounter{next: start, limit: start - 1, pending: map[int64]bool{}}
}

func (c *ackCounter) nextValue() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.next
	c.next++
	return v
}

// acknowledge marks v done (successful or not, as YCSB does: a failed insert must not stall
// the latest distribution forever).
func (c *ackCounter) acknowledge(v int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending[v] = true
	for c.pending[c.limit+1] {
		delete(c.pending, c.limit+1)
		c.limit++
	}
}

func (c *ackCounter) last() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.limit
}

// opChooser is YCSB's DiscreteGenerator over the operation proportions.
type opChooser struct {
	ops     []int // operation index (opRead, ...) per entry
	weights []float64
	sum     float64
}

func (c *opChooser) add(op int, w float64) {
	if w > 0 {
		c.ops = append(c.ops, op)
		c.weights = append(c.weights, w)
		c.sum += w
	}
}

func (c *opChooser) next(rng *rand.Rand) int {
	u := rng.Float64() * c.sum
	for i, w := range c.weights {
		if u < w {
			return c.ops[i]
		}
		u -= w
	}
	return c.ops[len(c.ops)-1]
}
