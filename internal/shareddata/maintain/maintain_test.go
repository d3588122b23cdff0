package maintain

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/continuum-project/continuum/internal/baselines/baselinetest"
)

func TestMain(m *testing.M) { baselinetest.Main(m) }

// fill writes n values of size bytes over keys distinct keys, in parallel: live data for a
// defragmentation to copy, and history for a compaction to drop.
func fill(t *testing.T, endpoint string, n, keys, size int) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	v := strings.Repeat("v", size)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				if _, err := cli.Put(context.Background(), fmt.Sprintf("/fill/%d", i%keys), v); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestDefragDowntimeIsSeenByTheProbe: etcd blocks a member while it defragments, so the probe
// must see a wait of at least half the defragmentation's duration; the same probe without
// maintenance sees less than that. continuum kv defragments without blocking; its rounds are
// recorded too.
func TestDefragDowntimeIsSeenByTheProbe(t *testing.T) {
	srv := baselinetest.Start(t, "etcd")
	ep := srv.Target.Endpoints[0]
	fill(t, ep, 3000, 2000, 20_000) // ~40 MB live
	off, err := Run(context.Background(), Config{Endpoint: ep, Duration: 2500 * time.Millisecond, Warmup: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	on, err := Run(context.Background(), Config{Endpoint: ep, Period: 700 * time.Millisecond, Duration: 3 * time.Second, OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("off: %+v", off)
	t.Logf("on: %+v", on)
	if on.Rounds < 1 || on.Failed != 0 {
		t.Fatalf("rounds %d, failed %d", on.Rounds, on.Failed)
	}
	if on.DowntimeMSMax < on.DefragMSMax/2 {
		t.Errorf("downtime %.1f ms during defrags of up to %.1f ms: etcd blocks while it defragments, the probe must see it",
			on.DowntimeMSMax, on.DefragMSMax)
	}
	if off.Rounds != 0 || off.Probes < 50 || off.ProbeMaxMS >= on.DowntimeMSMax {
		t.Errorf("without maintenance: %d rounds, %d probes, longest %.1f ms; with: %.1f ms", off.Rounds, off.Probes, off.ProbeMaxMS, on.DowntimeMSMax)
	}
	if on.DBBeforeMax <= on.DBAfterMin {
		t.Errorf("db before compaction %d <= after defrag %d", on.DBBeforeMax, on.DBAfterMin)
	}
	var sum Summary
	b, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil || json.Unmarshal(b, &sum) != nil || sum.Rounds != on.Rounds {
		t.Errorf("%s: %s, %v", SummaryFile, b, err)
	}
	rows, err := os.ReadFile(filepath.Join(dir, RoundsFile))
	if err != nil || strings.Count(string(rows), "\n") != on.Rounds+1 {
		t.Errorf("%s: %q, %v", RoundsFile, rows, err)
	}
}

func TestKVMaintenanceRounds(t *testing.T) {
	srv := baselinetest.Start(t, "kv")
	ep := srv.Target.Endpoints[0]
	fill(t, ep, 2000, 200, 10_000)
	on, err := Run(context.Background(), Config{Endpoint: ep, Period: 500 * time.Millisecond, Duration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kv: %+v", on)
	if on.Rounds < 1 || on.Failed != 0 || on.Probes == 0 || on.ProbeFailures != 0 {
		t.Errorf("kv maintenance %+v", on)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Duration: time.Second}, "no member endpoint"},
		{Config{Endpoint: "x", Period: -1, Duration: time.Second}, "must be >= 0"},
		{Config{Endpoint: "x", Period: time.Millisecond, Duration: time.Second}, "at least 100ms"},
		{Config{Endpoint: "x"}, "duration"},
	} {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}
