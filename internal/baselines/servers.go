package baselines

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/continuum-project/continuum/internal/freeport"
	"github.com/continuum-project/continuum/internal/loadgen/kvtarget"
)

// Config says where a server lives and how long to wait for it.
type Config struct {
	// Dir receives the data directory (Dir/data) and the log (Dir/server.log).
	Dir string
	// Bin is the server program; empty looks it up (see each start function).
	Bin string
	// ExtraArgs are appended to the command line (e.g. "--fsync=batch" for kv).
	ExtraArgs []string
	// ReadyTimeout bounds the wait for readiness (default DefaultReadyTimeout).
	ReadyTimeout time.Duration
}

// EtcdBinary finds etcd: bin, $CONTINUUM_ETCD_BIN, .tools/bin/etcd, next to the executable, PATH.
func EtcdBinary(bin string) (string, error) { return lookBinary(bin, "CONTINUUM_ETCD_BIN", "etcd") }

// RedisBinary finds redis-server: bin, $CONTINUUM_REDIS_BIN, PATH.
func RedisBinary(bin string) (string, error) {
	return lookBinary(bin, "CONTINUUM_REDIS_BIN", "redis-server")
}

// EtcdArgs is etcd's command line for a single member with its defaults (fsync on every
// commit) on the given loopback ports.
func EtcdArgs(bin, dataDir string, clientPort, peerPort int) []string {
	client := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peer := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	return []string{bin, "--name", "default", "--data-dir", dataDir,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "default=" + peer, "--log-level", "warn"}
}

// StartEtcd starts a single-member etcd on free loopback ports.
func StartEtcd(ctx context.Context, cfg Config) (*Server, error) {
	bin, err := EtcdBinary(cfg.Bin)
	if err != nil {
		return nil, err
	}
	ports, err := freeport.Ports(3)
	if err != nil {
		return nil, err
	}
	cp, pp, mp := ports[0], ports[1], ports[2]
	dataDir := filepath.Join(cfg.Dir, "data")
	args := append(EtcdArgs(bin, dataDir, cp, pp), "--listen-metrics-urls", loopbackURL(mp))
	return startEtcdProtocol(ctx, "etcd", kvtarget.KindEtcd, cp, mp, dataDir, cfg, append(args, cfg.ExtraArgs...))
}

// KVArgs is `continuum kv`'s command line with etcd's flag names.
func KVArgs(continuum, dataDir string, clientPort int) []string {
	client := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	return []string{continuum, "kv", "--name", "default", "--data-dir", dataDir,
		"--listen-client-urls", client, "--advertise-client-urls", client}
}

// StartKV starts `<cfg.Bin> kv` (cfg.Bin is the continuum binary; empty: this executable).
func StartKV(ctx context.Context, cfg Config) (*Server, error) {
	bin := cfg.Bin
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		bin = exe
	}
	if _, err := exec.LookPath(bin); err != nil {
		return nil, fmt.Errorf("continuum binary: %w", err)
	}
	ports, err := freeport.Ports(2)
	if err != nil {
		return nil, err
	}
	cp, mp := ports[0], ports[1]
	dataDir := filepath.Join(cfg.Dir, "data")
	args := append(KVArgs(bin, dataDir, cp), "--listen-metrics-urls", loopbackURL(mp))
	return startEtcdProtocol(ctx, "kv", kvtarget.KindKV, cp, mp, dataDir, cfg, append(args, cfg.ExtraArgs...))
}

func loopbackURL(port int) string { return "http://127.0.0.1:" + strconv.Itoa(port) }

// startEtcdProtocol starts a server that speaks etcd v3 and serves Prometheus metrics on
// metricsPort, and waits until Status answers.
func startEtcdProtocol(ctx context.Context, kind, targetKind string, port, metricsPort int, dataDir string, cfg Config, args []string) (*Server, error) {
	target := kvtarget.Target{Kind: targetKind, Endpoints: []string{"http://127.0.0.1:" + strconv.Itoa(port)}}
	// A client per readiness check, so the check also works for a Restart later.
	ready := func(ctx context.Context) error {
		cli, err := kvtarget.NewEtcd(target.Endpoints, 1)
		if err != nil {
			return err
		}
		defer cli.Close()
		_, err = cli.Status(ctx)
		return err
	}
	srv, err := start(ctx, kind, target, dataDir, filepath.Join(cfg.Dir, "server.log"), args, cfg.ReadyTimeout, ready)
	if err != nil {
		return nil, err
	}
	srv.MetricsURL = loopbackURL(metricsPort) + "/metrics"
	return srv, nil
}

// Redis durability (appendfsync): everysec acknowledges before the fsync (up to a second of
// acknowledged writes can be lost), always fsyncs before acknowledging.
const (
	RedisFsyncEverySec = "everysec"
	RedisFsyncAlways   = "always"
)

// RedisArgs is redis-server's command line: AOF on with the given appendfsync, RDB snapshots
// off (the AOF is the durability being compared), loopback only.
func RedisArgs(bin, dataDir string, port int, appendfsync string) []string {
	return []string{bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dataDir,
		"--appendonly", "yes", "--appendfsync", appendfsync, "--save", "",
		"--daemonize", "no", "--protected-mode", "no"}
}

// StartRedis starts redis-server with AOF (appendfsync everysec unless fsync is "always").
func StartRedis(ctx context.Context, cfg Config, appendfsync string) (*Server, error) {
	if appendfsync == "" {
		appendfsync = RedisFsyncEverySec
	}
	if appendfsync != RedisFsyncEverySec && appendfsync != RedisFsyncAlways {
		return nil, fmt.Errorf("redis appendfsync %q: want everysec or always", appendfsync)
	}
	bin, port, dataDir, err := prepare(cfg, RedisBinary)
	if err != nil {
		return nil, err
	}
	args := append(RedisArgs(bin, dataDir, port, appendfsync), cfg.ExtraArgs...)
	if slices.Contains(cfg.ExtraArgs, "--cluster-enabled") && !slices.Contains(cfg.ExtraArgs, "--cluster-port") {
		// A cluster member's bus listens on port+10000 unless told otherwise, which from
		// freeport's range lands in the kernel's ephemeral range, where another process may
		// hold it (seen in make test): the bus gets a port of its own.
		bus, err := freeport.Port()
		if err != nil {
			return nil, err
		}
		args = append(args, "--cluster-port", strconv.Itoa(bus))
	}
	target := kvtarget.Target{Kind: kvtarget.KindRedis, Endpoints: []string{"127.0.0.1:" + strconv.Itoa(port)}}
	ready := func(ctx context.Context) error {
		cli := kvtarget.NewRedis(target.Endpoints[0], 1)
		defer cli.Close()
		return cli.Ping(ctx)
	}
	return start(ctx, "redis", target, dataDir, filepath.Join(cfg.Dir, "server.log"), args, cfg.ReadyTimeout, ready)
}

// prepare finds a one-port server's binary and picks its port and data directory.
func prepare(cfg Config, find func(bin string) (string, error)) (bin string, port int, dataDir string, err error) {
	if bin, err = find(cfg.Bin); err != nil {
		return "", 0, "", err
	}
	ports, err := freeport.Ports(1)
	if err != nil {
		return "", 0, "", err
	}
	return bin, ports[0], filepath.Join(cfg.Dir, "data"), nil
}

// Start starts a server by kind (etcd, redis, kv); opts: Redis's appendfsync.
func Start(ctx context.Context, kind string, cfg Config, redisFsync string) (*Server, error) {
	switch kind {
	case kvtarget.KindEtcd:
		return StartEtcd(ctx, cfg)
	case kvtarget.KindRedis:
		return StartRedis(ctx, cfg, redisFsync)
	case kvtarget.KindKV:
		return StartKV(ctx, cfg)
	}
	return nil, fmt.Errorf("store %q: want kv, etcd or redis", kind)
}
