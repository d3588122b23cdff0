package pace

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/baselines/baselinetest"
	"github.com/continuum-project/continuum/internal/results"
	"github.com/continuum-project/continuum/internal/shareddata"
)

func TestMain(m *testing.M) { baselinetest.Main(m) }

// TestProducerAndConsumer runs one producer and one consumer against each single-server
// backend (and in both consumer modes) and checks the control loop closed: the consumer
// processed metrics, kept its queue at capacity, and the producer received the control
// answering its own metrics, no sooner than the inference time after publishing them.
func TestProducerAndConsumer(t *testing.T) {
	for _, c := range []struct{ backend, mode, consistency string }{
		{"etcd", ModePACE, ReadBoth},
		{"redis", ModePACE, ReadLinearizable},
		{"kv", ModeAtomic, ReadLinearizable},
	} {
		t.Run(c.backend+"-"+c.mode, func(t *testing.T) {
			srv := baselinetest.Start(t, c.backend)
			base := DefaultConfig()
			base.Store = shareddata.Config{Backend: c.backend, Endpoints: srv.Target.Endpoints}
			base.Group, base.MetricsSize, base.Period = "g1", 1000, 50*time.Millisecond
			base.StateSize, base.Inference = 4000, 5*time.Millisecond
			base.Mode, base.Consistency = c.mode, c.consistency
			base.Duration = 3 * time.Second
			prod, cons := base, base
			prod.Role, prod.ID, prod.OutDir = RoleProducer, "p1", t.TempDir()
			cons.Role, cons.ID, cons.OutDir = RoleConsumer, "c1", t.TempDir()
			cons.Duration = 4 * time.Second // outlives the producer: sees its last publications

			var wg sync.WaitGroup
			var consRep *Report
			var consErr error
			// The producer starts once the consumer listens (it first fills its queue).
			ready := make(chan struct{})
			cons.OnReady = func() { close(ready) }
			wg.Add(1)
			go func() { defer wg.Done(); consRep, consErr = Run(context.Background(), cons) }()
			select {
			case <-ready:
			case <-time.After(time.Minute):
				t.Fatal("consumer not ready within a minute")
			}
			prodRep, err := Run(context.Background(), prod)
			if err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			if consErr != nil {
				t.Fatal(consErr)
			}
			if prodRep.Published < 40 || consRep.Processed < prodRep.Published/2 || prodRep.ControlDelivered < consRep.Processed/2 {
				t.Errorf("producer %+v, consumer %+v: the loop did not close", prodRep, consRep)
			}
			if consRep.Gaps != 0 || consRep.BadValues != 0 || prodRep.BadValues != 0 {
				t.Errorf("gaps or bad values: producer %+v, consumer %+v", prodRep, consRep)
			}
			checkSeries(t, prod.OutDir, OpPut, OpCtrl, OpLoop)
			want := []string{OpNotify, OpProcess, OpPut}
			if c.mode == ModeAtomic {
				want = append(want, OpPush)
			} else {
				want = append(want, OpDel, OpGetLin)
				if c.consistency == ReadBoth {
					want = append(want, OpGetSer)
				}
			}
			checkSeries(t, cons.OutDir, want...)
			st := readStats(t, prod.OutDir)
			if loop := st.Series[OpLoop].Latency; loop.P50 < 5 {
				t.Errorf("loop p50 %v ms: below the 5 ms inference", loop.P50)
			}
			// The queue is at capacity (4 entries) and ends with the last metrics processed.
			s, err := shareddata.Open(context.Background(), base.Store)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			q, err := s.StateRead(context.Background(), "c1")
			if err != nil || len(q) != 4 || !strings.HasPrefix(string(q[3]), "m;") {
				t.Errorf("state queue %d entries, %v", len(q), err)
			}
			var rep Report
			b, err := os.ReadFile(filepath.Join(cons.OutDir, ReportFile))
			if err != nil || json.Unmarshal(b, &rep) != nil || rep.Processed != consRep.Processed || rep.Capacity != 4 {
				t.Errorf("pace.json %s, %v", b, err)
			}
		})
	}
}

func readStats(t *testing.T, dir string) results.Stats {
	t.Helper()
	var st results.Stats
	if err := results.ReadJSON(filepath.Join(dir, results.StatsFile), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// checkSeries checks that every named operation type was measured, without errors.
func checkSeries(t *testing.T, dir string, ops ...string) {
	t.Helper()
	st := readStats(t, dir)
	for _, op := range ops {
		s, ok := st.Series[op]
		if !ok || s.OK == 0 {
			t.Errorf("%s: series %s missing or empty (%+v)", dir, op, s)
		} else if s.Errors != 0 {
			t.Errorf("%s: series %s has errors %v", dir, op, s.ErrorsByType)
		}
	}
}
