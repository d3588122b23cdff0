package pace

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"
)

// Values carry a short header, then filler up to their size, so that a subscriber measures a
// delivery from the publisher's clock (the testbed's nodes share the host's):
//
//	metrics: "m;<published unix ns>;<seq>;" + filler
//	control: "c;<published unix ns>;<metrics published unix ns>;<seq>;" + filler
//
// seq is the producer's metrics sequence number, which control echoes. The filler is random
// bytes, a different stretch for every value: metrics are measurements, not repeated text, and
// a store that compresses what it sends (continuum kv's replication does) must not be credited
// with squeezing filler to nothing.

// header is a decoded value header.
type header struct {
	kind      byte // 'm' or 'c'
	published time.Time
	metrics   time.Time // control only: when the metrics it answers were published
	seq       int64
}

func encode(h header, size int) []byte {
	b := make([]byte, 0, max(size, 64))
	b = append(b, h.kind, ';')
	b = strconv.AppendInt(b, h.published.UnixNano(), 10)
	b = append(b, ';')
	if h.kind == 'c' {
		b = strconv.AppendInt(b, h.metrics.UnixNano(), 10)
		b = append(b, ';')
	}
	b = strconv.AppendInt(b, h.seq, 10)
	b = append(b, ';')
	if n := size - len(b); n > 0 {
		off := fillerNext.Add(1) * 104729 % uint64(len(filler)-n+1)
		b = append(b, filler[off:off+uint64(n)]...)
	}
	return b
}

// filler is random bytes that values take their filler from (4 MiB: more than the 1 MiB a
// value may have), starting at a different offset each time.
var (
	filler = func() []byte {
		b := make([]byte, 4<<20)
		_, _ = rand.NewChaCha8([32]byte{'p', 'a', 'c', 'e'}).Read(b)
		return b
	}()
	fillerNext atomic.Uint64
)

func decode(v []byte) (header, error) {
	var h header
	if len(v) < 2 || (v[0] != 'm' && v[0] != 'c') || v[1] != ';' {
		return h, fmt.Errorf("pace value %.20q: no m; or c; header", v)
	}
	h.kind = v[0]
	fields := 2
	if h.kind == 'c' {
		fields = 3
	}
	rest := v[2:]
	var nums [3]int64
	for i := 0; i < fields; i++ {
		j := bytes.IndexByte(rest, ';')
		if j < 0 {
			return h, fmt.Errorf("pace value %.20q: header has %d fields, want %d", v, i, fields)
		}
		n, err := strconv.ParseInt(string(rest[:j]), 10, 64)
		if err != nil || n < 0 {
			return h, fmt.Errorf("pace value %.20q: field %d is not a number", v, i+1)
		}
		nums[i], rest = n, rest[j+1:]
	}
	h.published = time.Unix(0, nums[0])
	if h.kind == 'c' {
		h.metrics, h.seq = time.Unix(0, nums[1]), nums[2]
	} else {
		h.seq = nums[1]
	}
	return h, nil
}
