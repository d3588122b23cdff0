package server

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/continuum-project/continuum/internal/testenv"
)

func TestNewCompactor(t *testing.T) {
	tests := []struct {
		mode, retention string
		wantNil         bool
		wantErr         bool
		want            compactor
	}{
		{"periodic", "0", true, false, compactor{}},
		{"periodic", "", true, false, compactor{}},
		{"periodic", "1h", false, false, compactor{periodic: true, retention: time.Hour, interval: 6 * time.Minute}},
		{"periodic", "2", false, false, compactor{periodic: true, retention: 2 * time.Hour, interval: 6 * time.Minute}},
		{"periodic", "30m", false, false, compactor{periodic: true, retention: 30 * time.Minute, interval: 3 * time.Minute}},
		{"revision", "1000", false, false, compactor{revs: 1000, interval: 5 * time.Minute}},
		{"revision", "1h", false, true, compactor{}},
		{"weekly", "1", false, true, compactor{}},
		{"periodic", "soon", false, true, compactor{}},
	}
	for _, tt := range tests {
		c, err := newCompactor(tt.mode, tt.retention)
		if (err != nil) != tt.wantErr {
			t.Fatalf("%s %s: err %v", tt.mode, tt.retention, err)
		}
		if err != nil {
			continue
		}
		if (c == nil) != tt.wantNil {
			t.Fatalf("%s %s: %+v", tt.mode, tt.retention, c)
		}
		if c != nil && *c != tt.want {
			t.Fatalf("%s %s: %+v, want %+v", tt.mode, tt.retention, *c, tt.want)
		}
	}
}

func TestRevisionAutoCompaction(t *testing.T) {
	s, cli := startKV(t)
	ctx := ctxT(t)
	for range 20 {
		if _, err := cli.Put(ctx, "k", "v"); err != nil { // revisions 2..21
			t.Fatal(err)
		}
	}
	c := &compactor{revs: 5, interval: 20 * time.Millisecond}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { c.run(stop, s.store, s.log); close(done) }()
	defer func() { close(stop); <-done }()
	testenv.Eventually(t, 30*time.Second, "the auto compaction at revision 16", func() bool { return s.store.CompactRev() == 16 })
	if _, err := cli.Get(context.Background(), "k", clientv3.WithRev(15)); err == nil {
		t.Fatal("read below the auto compaction succeeded")
	}
}
