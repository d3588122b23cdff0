package kvbench

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/continuum-project/continuum/internal/loadgen/ycsb"
)

// insertDB records inserts; every other operation is unexpected.
type insertDB struct {
	mu     sync.Mutex
	keys   map[string]int
	failAt int // fail the insert with this count (0: never)
}

func (d *insertDB) Insert(_ context.Context, key, value string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failAt > 0 && len(d.keys)+1 == d.failAt {
		return errors.New("disk full")
	}
	d.keys[key] = len(value)
	return nil
}
func (d *insertDB) Read(context.Context, string) error                    { return errors.New("read") }
func (d *insertDB) Update(context.Context, string, string) error          { return errors.New("update") }
func (d *insertDB) Scan(context.Context, string, int) error               { return errors.New("scan") }
func (d *insertDB) ReadModifyWrite(context.Context, string, string) error { return errors.New("rmw") }
func (d *insertDB) Close() error                                          { return nil }

func TestGrowInsertsDistinctKeysOfTheWorkloadsShape(t *testing.T) {
	w, err := ycsb.Preset("a")
	if err != nil {
		t.Fatal(err)
	}
	w.RecordCount, w.FieldCount, w.FieldLength = 1000, 1, 32
	db := &insertDB{keys: map[string]int{}}
	if err := grow(context.Background(), db, w, 5000, 8); err != nil {
		t.Fatal(err)
	}
	if len(db.keys) != 5000 {
		t.Fatalf("%d distinct keys, want 5000", len(db.keys))
	}
	for i := range w.RecordCount + 100 { // never a loaded or run-inserted record's key
		if _, ok := db.keys[w.KeyName(i)]; ok {
			t.Fatalf("footprint reused record key %d", i)
		}
	}
	for k, n := range db.keys {
		if !strings.HasPrefix(k, "user") || n != 32 {
			t.Fatalf("key %q value %d bytes", k, n)
		}
	}
}

func TestGrowStopsAtTheFirstError(t *testing.T) {
	w, _ := ycsb.Preset("a")
	db := &insertDB{keys: map[string]int{}, failAt: 100}
	err := grow(context.Background(), db, w, 10000, 4)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v", err)
	}
	if len(db.keys) >= 10000 {
		t.Fatalf("kept inserting after the error: %d", len(db.keys))
	}
}
