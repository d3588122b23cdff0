package aggregator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestInspect(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 31) + "1" + strings.Repeat("}", 31)
	var many []string
	for i := range 130 {
		many = append(many, fmt.Sprintf(`"k%d":%d`, i, i))
	}
	for _, c := range []struct {
		value, id string
		leaves    int
		err       string
	}{
		{value: `{"id":"u1-7","user":1,"seq":7,"pad":"x"}`, id: "u1-7", leaves: 4},
		{value: `{"id":12,"a":{"b":[1,null,{"c":true}]}}`, id: "12", leaves: 3},
		{value: `{"v":1}`, leaves: 1},
		{value: `not json`, err: "not JSON"},
		{value: `{"a":1} {}`, err: "data after"},
		{value: `[1,2]`, err: "not a JSON object"},
		{value: `{"id":"a.b"}`, err: "must not contain"},
		{value: `{"id":"ok","x/y":1}`, err: "must not contain"},
		{value: `{"id":false}`, err: "want a string or a number"},
		{value: `{"v":null,"w":{}}`, err: "no non-null value"},
		{value: `{"v":1e999}`, err: "out of range"},
		{value: deep, err: "too deep"},
		{value: "{" + strings.Join(many, ",") + "}", err: "130 leaves"},
	} {
		id, n, err := inspect([]byte(c.value), "id", 2, 128)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%.40s: %v, want %q", c.value, err, c.err)
			}
			continue
		}
		if err != nil || id != c.id || n != c.leaves {
			t.Errorf("%s: id %q leaves %d err %v, want %q %d", c.value, id, n, err, c.id, c.leaves)
		}
	}
}

func TestBatches(t *testing.T) {
	a := &Aggregator{cfg: Config{KeyField: "id", MaxLeaves: 10}, path: []string{"records"}, deadPath: []string{"dead"}, log: discard()}
	var recs []*kgo.Record
	add := func(v string) {
		recs = append(recs, &kgo.Record{Topic: "t.x", Partition: 2, Offset: int64(len(recs)), Value: []byte(v)})
	}
	add(`{"id":"a","v":1,"w":2,"x":3}`) // 3 leaves, superseded by offset 3
	add(`{"id":"b","v":1,"w":2,"x":3,"y":4}`)
	add(`oops`)
	add(`{"id":"a","v":9}`)
	add(`{"v":5,"w":6,"x":7}`)
	bs := a.batches(recs)
	var got []string
	for _, b := range bs {
		var paths []string
		n := 0
		for _, w := range b {
			paths = append(paths, w.path)
			n += w.leaves
		}
		if n > 10 {
			t.Errorf("batch %v has %d leaves, over 10", paths, n)
		}
		got = append(got, strings.Join(paths, ","))
	}
	want := "records/b,dead/t_x-2-2|records/a,records/t_x-2-4" // 4+5 leaves, then 2+3
	if strings.Join(got, "|") != want {
		t.Errorf("batches %q, want %q", strings.Join(got, "|"), want)
	}
	var dl map[string]any
	if err := json.Unmarshal(bs[0][1].value, &dl); err != nil || dl["value"] != "oops" || dl["offset"] != 2.0 || dl["topic"] != "t.x" {
		t.Errorf("dead letter %s (%v)", bs[0][1].value, err)
	}
	if string(bs[1][0].value) != `{"id":"a","v":9}` {
		t.Errorf("the write of a is %s, want the last record", bs[1][0].value)
	}
}

// TestBatchesBoundPaths: small records are packed at most maxBatchPaths to a PATCH, however few
// leaves they have, since the database refuses a write of more than 63 paths (its read Txn).
func TestBatchesBoundPaths(t *testing.T) {
	a := &Aggregator{cfg: Config{KeyField: "id", MaxLeaves: 120}, path: []string{"records"}, deadPath: []string{"dead"}, log: discard()}
	var recs []*kgo.Record
	for i := range 150 {
		recs = append(recs, &kgo.Record{Topic: "t", Offset: int64(i), Value: []byte(fmt.Sprintf(`{"id":"r%d"}`, i))})
	}
	var sizes []int
	for _, b := range a.batches(recs) {
		sizes = append(sizes, len(b))
	}
	if fmt.Sprint(sizes) != fmt.Sprint([]int{maxBatchPaths, maxBatchPaths, 150 - 2*maxBatchPaths}) {
		t.Errorf("batch sizes %v of 150 one-leaf records, want at most %d each", sizes, maxBatchPaths)
	}
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Any record either becomes a write of a JSON object within the leaf bound, or a dead letter
// that is itself a JSON object naming the record: none is lost or breaks the batch.
func FuzzToWrite(f *testing.F) {
	for _, s := range []string{`{"id":"a","v":1}`, `{"id":1.5e3,"a":[1,{"b":null}]}`, `[1]`, `{"id":"a.b"}`, "\xff\xfe", `{"v":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		r := &kgo.Record{Topic: "t", Partition: 1, Offset: 9, Value: value}
		w := toWrite(r, []string{"records"}, []string{"dead"}, "id", 128)
		var v map[string]any
		if err := json.Unmarshal(w.value, &v); err != nil {
			t.Fatalf("value %q: write %q is not a JSON object: %v", value, w.value, err)
		}
		switch {
		case w.dead && w.path != "dead/t-1-9":
			t.Fatalf("dead letter at %q", w.path)
		case !w.dead && (w.leaves < 1 || w.leaves > 128 || !strings.HasPrefix(w.path, "records/")):
			t.Fatalf("write %q with %d leaves", w.path, w.leaves)
		}
	})
}

// TestUnreachableAtStart: an aggregator whose brokers nobody serves says so and exits within its
// start timeout, naming the address, instead of waiting forever.
func TestUnreachableAtStart(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Brokers, cfg.Topics, cfg.RTDB = []string{"127.0.0.1:1"}, []string{"t"}, "http://127.0.0.1:2"
	cfg.StartTimeout, cfg.Logger = 2*time.Second, discard()
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), cfg) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no Kafka broker answered at 127.0.0.1:1") {
			t.Errorf("Run: %v, want an error naming the broker", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run still waiting a minute after a 2 s start timeout")
	}
}
