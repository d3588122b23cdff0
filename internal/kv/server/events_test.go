package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A member started with an events file appends a caught_up line for its peer once it holds
// what the peer held when their stream opened, with the wall times the testbed's convergence
// figures are computed from.
func TestEventsFileRecordsCatchUps(t *testing.T) {
	addrs := freePorts(t, 2)
	ic := map[string][]string{"m0": {"http://" + addrs[0]}, "m1": {"http://" + addrs[1]}}
	path := filepath.Join(t.TempDir(), "events.jsonl")
	// m1 starts and takes its write before m0 exists: m0's first stream from m1 then finds m1
	// holding a change m0 lacks, which is what a catch-up is. (Started the other way round, a
	// stream that opens before the write sees nothing to catch up with, and the write arrives
	// as ordinary replication, with no event: on a busy machine that was 1 run in 6.)
	for _, i := range []int{1, 0} {
		name := fmt.Sprintf("m%d", i)
		_, cli := startKV(t, func(c *Config) {
			c.Name, c.InitialCluster, c.InitialClusterToken, c.ListenPeerURLs = name, ic, "test", ic[name]
			if name == "m0" {
				c.EventsFile = path
			}
		})
		if name == "m1" {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if _, err := cli.Put(ctx, "k", "v"); err != nil {
				t.Fatal(err)
			}
			cancel()
		}
	}
	start := time.Now()
	deadline := start.Add(30 * time.Second)
	for {
		if e, ok := firstCatchUp(t, path); ok {
			if e.Member != "m0" || e.Peer != "m1" || e.ReconnectAt.IsZero() || e.CaughtUpAt.Before(e.ReconnectAt) ||
				e.CaughtUpAt.Before(start.Add(-time.Minute)) {
				t.Fatalf("caught_up event %+v", e)
			}
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(path)
			t.Fatalf("no caught_up event for m1 after 30s; events file:\n%s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func firstCatchUp(t *testing.T, path string) (Event, bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("events file: %v", err) // created when the member starts
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue // a line being written; a malformed file never yields the event and fails
		}
		if e.Event == EventCaughtUp && e.Peer == "m1" {
			return e, true
		}
	}
	return Event{}, false
}

// A member stopped cleanly appends its storage engine's write counters, the figures the
// testbed reports write amplification from.
func TestEventsFileRecordsStorageAtShutdown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	srv, cli := startKV(t, func(c *Config) { c.EventsFile = path })
	for i := range 50 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := cli.Put(ctx, fmt.Sprint("k", i), "value")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got *StorageCounters
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if e.Event == EventStorage {
			got = e.Storage
		}
	}
	// 50 puts of ~10-byte values logged at least their keys and values.
	if got == nil || got.WALBytes < 50*10 || got.WriteAmp < 1 {
		t.Fatalf("storage event %+v in:\n%s", got, b)
	}
}
