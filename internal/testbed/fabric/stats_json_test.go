package fabric

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestHistogramJSON: a histogram survives the control socket's JSON, quantiles and all.
func TestHistogramJSON(t *testing.T) {
	var h Histogram
	for _, us := range []int64{0, 3, 15, 16, 100, 1000, 20000, 1 << 40} {
		h.record(us * 1000)
	}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var back Histogram
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back != h {
		t.Fatalf("%s read back as %+v, want %+v", b, back, h)
	}
	if back.Quantile(0.5) != h.Quantile(0.5) || back.Max() != h.Max() || back.Count() != 8 {
		t.Errorf("read back: p50 %v max %v n %d", back.Quantile(0.5), back.Max(), back.Count())
	}
	var empty Histogram
	if err := json.Unmarshal([]byte(`{"n":0,"max_us":0}`), &empty); err != nil || empty.Quantile(0.99) != 0*time.Second {
		t.Errorf("empty: %v, %v", err, empty)
	}
	for in, want := range map[string]string{
		`{"n":1,"buckets":{"9999":1}}`:                       "bucket 9999",
		`{"n":5,"buckets":{"1":1}}`:                          "count 5, its buckets hold 1",
		`{"n":0,"buckets":{"1":18446744073709551615,"2":2}}`: "overflow",
		`[1]`:                                  "cannot unmarshal",
		`{"n":0,"max_us":-1}`:                  "maximum -1",
		`{"n":0,"max_us":9223372036854775807}`: "maximum 9223372036854775807",
	} {
		var x Histogram
		if err := json.Unmarshal([]byte(in), &x); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", in, err, want)
		}
	}
}

// FuzzHistogramJSON: no input makes UnmarshalJSON panic, and what it accepts marshals back to
// what reads as the same histogram.
func FuzzHistogramJSON(f *testing.F) {
	f.Add([]byte(`{"n":2,"max_us":7,"buckets":{"3":1,"7":1}}`))
	f.Add([]byte(`{"n":0}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Histogram
		if json.Unmarshal(b, &h) != nil {
			return
		}
		out, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		var back Histogram
		if err := json.Unmarshal(out, &back); err != nil || back != h {
			t.Fatalf("%s -> %s -> %+v (%v)", b, out, back, err)
		}
		_ = h.Quantile(0.99)
	})
}
