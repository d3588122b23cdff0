package pace

import (
	"bytes"
	"compress/gzip"
	"testing"
	"time"
)

func TestPayloadRoundTrip(t *testing.T) {
	m := header{kind: 'm', published: time.Unix(12, 345), seq: 7}
	c := header{kind: 'c', published: time.Unix(13, 0), metrics: time.Unix(12, 345), seq: 7}
	for _, h := range []header{m, c} {
		v := encode(h, 1000)
		if len(v) != 1000 {
			t.Errorf("size %d, want 1000", len(v))
		}
		got, err := decode(v)
		if err != nil || got.kind != h.kind || !got.published.Equal(h.published) || !got.metrics.Equal(h.metrics) || got.seq != h.seq {
			t.Errorf("%+v -> %+v, %v", h, got, err)
		}
	}
	// A size below the header's keeps the whole header.
	if got, err := decode(encode(m, 1)); err != nil || got.seq != 7 {
		t.Errorf("short value: %+v, %v", got, err)
	}
}

// FuzzDecode: values come from the store, written by anything; decode refuses or parses,
// never panics, and what it parses re-encodes to the same header.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("m;1;2;xx"))
	f.Add([]byte("c;1;2;3;"))
	f.Add([]byte("c;1;2"))
	f.Add([]byte("m;-1;2;"))
	f.Fuzz(func(t *testing.T, v []byte) {
		h, err := decode(v)
		if err != nil {
			return
		}
		again, err := decode(encode(h, 0))
		if err != nil || again != h {
			t.Fatalf("%q -> %+v -> %+v, %v", v, h, again, err)
		}
	})
}

// TestFillerDoesNotCompress: values must cost a compressing store what real measurements
// would: gzip may not shrink a Wave-class value much, nor two values share their filler.
func TestFillerDoesNotCompress(t *testing.T) {
	a := encode(header{kind: 'm', published: time.Unix(1, 0)}, 100_000)
	b := encode(header{kind: 'm', published: time.Unix(1, 0)}, 100_000)
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(a)
	_ = w.Close()
	if buf.Len() < 99_000 {
		t.Errorf("a 100 kB value gzips to %d bytes", buf.Len())
	}
	if bytes.Equal(a[20:], b[20:]) {
		t.Error("two values share their filler")
	}
}
