package kvtarget_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/loadgen"
	"github.com/continuum-project/continuum/internal/loadgen/kvtarget"
	"github.com/continuum-project/continuum/internal/loadgen/ycsb"
)

var _ ycsb.DB = kvtarget.Store(nil)

// startStore starts a real server of kind (skipping without its binary, failing under
// CONTINUUM_REQUIRE_ROOT=1) and returns a connected store; both end at cleanup.
func startStore(t *testing.T, kind string) (kvtarget.Store, *baselines.Server) {
	t.Helper()
	find := baselines.EtcdBinary
	bc := baselines.Config{Dir: t.TempDir()}
	switch kind {
	case kvtarget.KindRedis:
		find = baselines.RedisBinary
	case kvtarget.KindKV:
		// `continuum kv` is tested when $CONTINUUM_BIN names a built binary (building one here
		// would make every run of this package slow).
		bc.Bin = os.Getenv("CONTINUUM_BIN")
		if bc.Bin == "" {
			t.Skip("set CONTINUUM_BIN to a continuum binary to test `continuum kv`")
		}
		find = func(string) (string, error) { return bc.Bin, nil }
	}
	if _, err := find(""); err != nil {
		if os.Getenv("CONTINUUM_REQUIRE_ROOT") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := baselines.Start(ctx, kind, bc, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	st, err := kvtarget.Open(srv.Target, kvtarget.Options{Conns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st, srv
}

func TestEtcdAndRedisOperations(t *testing.T) {
	for _, kind := range []string{kvtarget.KindEtcd, kvtarget.KindRedis, kvtarget.KindKV} {
		t.Run(kind, func(t *testing.T) {
			st, _ := startStore(t, kind)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := st.Read(ctx, "user1"); loadgen.ClassifyError(err) != kvtarget.ErrNotFoundType {
				t.Errorf("read of a missing key: %v (%s)", err, loadgen.ClassifyError(err))
			}
			if err := st.ReadModifyWrite(ctx, "user1", "x"); loadgen.ClassifyError(err) != kvtarget.ErrNotFoundType {
				t.Errorf("rmw of a missing key: %v", err)
			}
			for i := range 10 {
				if err := st.Insert(ctx, fmt.Sprintf("user%d", i), strings.Repeat("v", 32)); err != nil {
					t.Fatal(err)
				}
			}
			for _, op := range []func() error{
				func() error { return st.Read(ctx, "user3") },
				func() error { return st.Update(ctx, "user3", "new") },
				func() error { return st.ReadModifyWrite(ctx, "user3", "newer") },
				func() error { return st.Scan(ctx, "user5", 3) },
				func() error { return st.Scan(ctx, "zzz", 3) }, // past the last key: empty, no error
			} {
				if err := op(); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// TestYCSBWorkloadsAgainstRealStores runs every preset briefly on etcd and Redis: the load
// phase inserts every record and the run phase has no errors at all (no misses, no timeouts).
func TestYCSBWorkloadsAgainstRealStores(t *testing.T) {
	for _, kind := range []string{kvtarget.KindEtcd, kvtarget.KindRedis, kvtarget.KindKV} {
		t.Run(kind, func(t *testing.T) {
			st, _ := startStore(t, kind)
			for i, wl := range []string{"a", "b", "c", "d", "e", "f"} {
				cfg := ycsb.DefaultConfig()
				cfg.Workload, _ = ycsb.Preset(wl)
				cfg.Workload.RecordCount, cfg.Workload.FieldCount, cfg.Workload.FieldLength = 200, 1, 32
				cfg.Workload.OperationCount = 300
				cfg.Phase = ycsb.PhaseBoth
				if i > 0 {
					cfg.Phase = ycsb.PhaseRun // records 0..199 are already there
				}
				cfg.Run.Rate, cfg.Run.Clients, cfg.Run.Duration = 0, 8, 0
				cfg.Run.Timeout = 5 * time.Second
				res, err := ycsb.Run(context.Background(), cfg, st)
				if err != nil {
					t.Fatalf("workload %s: %v", wl, err)
				}
				var ok int64
				for op, s := range res.Run.Stats.Series {
					ok += s.OK
					if s.Errors > 0 {
						t.Errorf("workload %s %s: %d errors %v", wl, op, s.Errors, s.ErrorsByType)
					}
				}
				if ok != 300 {
					t.Errorf("workload %s: %d ok, want 300", wl, ok)
				}
			}
		})
	}
}

func TestEtcdRedisErrorsAreTyped(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"unavailable", status.Error(codes.Unavailable, "no leader"), "grpc_Unavailable"},
		{"nospace", rpctypes.ErrGRPCNoSpace, "grpc_ResourceExhausted"},
		{"deadline", context.DeadlineExceeded, "grpc_DeadlineExceeded"},
	}
	for _, c := range cases {
		if got := loadgen.ClassifyError(kvtarget.EtcdError(c.err)); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	if got := loadgen.ClassifyError(kvtarget.EtcdError(errors.New("plain"))); got != loadgen.ErrOther {
		t.Errorf("plain error: %s", got)
	}
}

// A stopped server shows up as typed errors, not as a hang past the deadline.
func TestEtcdRedisStoppedServerErrors(t *testing.T) {
	for _, kind := range []string{kvtarget.KindEtcd, kvtarget.KindRedis} {
		t.Run(kind, func(t *testing.T) {
			st, srv := startStore(t, kind)
			_ = srv.Stop()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			start := time.Now()
			err := st.Read(ctx, "user1")
			typ := loadgen.ClassifyError(err)
			if err == nil || time.Since(start) > 3*time.Second {
				t.Fatalf("read from a stopped server: %v after %v", err, time.Since(start))
			}
			// go-redis retries the dial a few times with backoff, which may outlast the deadline
			// on a busy machine.
			want := map[string][]string{
				kvtarget.KindEtcd:  {"grpc_Unavailable", "grpc_DeadlineExceeded"},
				kvtarget.KindRedis: {loadgen.ErrConnectionRefused, loadgen.ErrConnectionReset, loadgen.ErrTimeout},
			}[kind]
			if !slices.Contains(want, typ) {
				t.Errorf("type %q (%v), want one of %v", typ, err, want)
			}
		})
	}
}

func TestKVParseTarget(t *testing.T) {
	good := []string{"etcd=http://127.0.0.1:2379", "kv=http://a:1,http://b:2", "redis=127.0.0.1:6379"}
	for _, s := range good {
		tg, err := kvtarget.ParseTarget(s)
		if err != nil || tg.String() != s {
			t.Errorf("%s: %v %v", s, tg, err)
		}
	}
	for _, s := range []string{"etcd", "etcd=127.0.0.1:2379", "redis=http://x:1", "mongo=x:1", "redis=a:1,b:2", "etcd="} {
		if _, err := kvtarget.ParseTarget(s); err == nil {
			t.Errorf("%s accepted", s)
		}
	}
}
