package kubebench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/continuum-project/continuum/internal/baselines"
	"github.com/continuum-project/continuum/internal/benchkit"
	"github.com/continuum-project/continuum/internal/freeport"
	"github.com/continuum-project/continuum/internal/kubernetes/controlplane"
)

// Run measures every store Repeats times, interleaved (kv, etcd, kv, etcd, ...), then the races,
// also interleaved by repeat. A store or setting that fails records its error and the run goes
// on; Run fails only on a bad config or a context cancelled.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.KubeBinDir == "" {
		d, err := controlplane.FindBinDir()
		if err != nil {
			return nil, err
		}
		cfg.KubeBinDir = d
	}
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "kubebench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		cfg.Dir = d
	}
	res := &Result{Header: benchkit.Start(cfg.Command), Config: cfg}
	for rep := 1; rep <= cfg.Repeats; rep++ {
		for _, store := range cfg.Stores {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			benchkit.Logf(cfg.Log, "repeat %d/%d: %s: latency, footprint, restart", rep, cfg.Repeats, store)
			run := measureStore(ctx, cfg, store, rep, filepath.Join(cfg.Dir, fmt.Sprintf("%s-%d", store, rep)))
			if run.Error != "" {
				benchkit.Logf(cfg.Log, "  %s: %s", store, run.Error)
			}
			res.Runs = append(res.Runs, run)
			res.SampleLoad()
		}
	}
	if cfg.Race {
		for rep := 1; rep <= cfg.Repeats; rep++ {
			for _, store := range cfg.Stores {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				benchkit.Logf(cfg.Log, "repeat %d/%d: %s: race", rep, cfg.Repeats, store)
				dir := filepath.Join(cfg.Dir, fmt.Sprintf("race-%s-%d", store, rep))
				for _, r := range raceStore(ctx, cfg, store, rep, dir) {
					benchkit.Logf(cfg.Log, "  %s: %d successes, %d conflicts, final %d, lost %d %s", r.Setting, r.Successes, r.Conflicts, r.Final, r.Lost, r.Error)
					res.Races = append(res.Races, r)
				}
				res.SampleLoad()
			}
		}
	}
	res.Finish()
	return res, nil
}

// startStore starts a single-member store on free loopback ports, its data in dir/data.
func startStore(ctx context.Context, cfg Config, store, dir string) (*baselines.Server, error) {
	switch store {
	case StoreKV:
		return baselines.StartKV(ctx, baselines.Config{Dir: dir, Bin: cfg.ContinuumBin})
	case StoreEtcd:
		return baselines.StartEtcd(ctx, baselines.Config{Dir: dir, Bin: cfg.EtcdBin})
	}
	return nil, fmt.Errorf("store %q: want kv or etcd", store)
}

// startKVCluster starts members continuum kv members that replicate to each other (a full mesh
// from --initial-cluster), each on its own loopback ports, data in dir/m<i>/data.
func startKVCluster(ctx context.Context, cfg Config, members int, dir string) ([]*baselines.Server, error) {
	ports, err := freeport.Ports(members)
	if err != nil {
		return nil, err
	}
	var ic []string
	for i, p := range ports {
		ic = append(ic, fmt.Sprintf("m%d=http://127.0.0.1:%d", i+1, p))
	}
	var out []*baselines.Server
	for i, p := range ports {
		// --name after KVArgs' "default": the last occurrence of a flag wins.
		extra := []string{"--name", fmt.Sprintf("m%d", i+1), "--listen-peer-urls", "http://127.0.0.1:" + strconv.Itoa(p),
			"--initial-cluster", strings.Join(ic, ","), "--initial-cluster-token", "kubebench"}
		s, err := baselines.StartKV(ctx, baselines.Config{Dir: filepath.Join(dir, fmt.Sprintf("m%d", i+1)), Bin: cfg.ContinuumBin, ExtraArgs: extra})
		if err != nil {
			stopAll(out)
			return nil, fmt.Errorf("kv member m%d: %w", i+1, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func stopAll(servers []*baselines.Server) {
	for _, s := range servers {
		_ = s.Stop()
	}
}

// startAPIServer starts kube-apiserver alone on the store at endpoint, its state in dir.
func startAPIServer(ctx context.Context, cfg Config, endpoint, dir string) (*controlplane.ControlPlane, time.Duration, error) {
	c := controlplane.DefaultConfig()
	c.Dir, c.EtcdServers, c.BinDir = dir, []string{endpoint}, cfg.KubeBinDir
	c.ReadyTimeout = 3 * time.Minute // a busy 2-core machine, several apiservers starting at once
	t0 := time.Now()
	cp, err := controlplane.Start(ctx, c)
	return cp, time.Since(t0), err
}
