package compat

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/continuum-project/continuum/internal/testenv"
)

// target is a store the suites run against: real etcd (the specification) or continuum kv.
type target struct {
	name string
	// binary returns the server binary, or why it is unavailable.
	binary func() (string, error)
	// args builds the server's command line.
	args func(name, dataDir string, clientPort, peerPort int, o serverOptions) []string
	// continuum: the binary is continuum (`continuum kv ...`), not etcd.
	continuum bool
}

// serverOptions are the knobs some suites need; zero values keep the server's defaults.
type serverOptions struct {
	quotaBackendBytes      int64
	maxRequestBytes        int
	progressNotifyInterval time.Duration // etcd's --watch-progress-notify-interval
	metricsPort            int           // --listen-metrics-urls on 127.0.0.1
	authToken              string        // --auth-token
}

func (o serverOptions) flags() []string {
	var f []string
	if o.quotaBackendBytes > 0 {
		f = append(f, "--quota-backend-bytes", strconv.FormatInt(o.quotaBackendBytes, 10))
	}
	if o.maxRequestBytes > 0 {
		f = append(f, "--max-request-bytes", strconv.Itoa(o.maxRequestBytes))
	}
	if o.progressNotifyInterval > 0 {
		f = append(f, "--watch-progress-notify-interval", o.progressNotifyInterval.String())
	}
	if o.authToken != "" {
		f = append(f, "--auth-token", o.authToken)
	}
	if o.metricsPort > 0 {
		f = append(f, "--listen-metrics-urls", fmt.Sprintf("http://127.0.0.1:%d", o.metricsPort))
	}
	return f
}

var etcdTarget = &target{
	name:   "etcd",
	binary: func() (string, error) { return toolBinary("CONTINUUM_ETCD_BIN", "etcd") },
	args: func(name, dataDir string, clientPort, peerPort int, o serverOptions) []string {
		client := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
		peer := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
		return append([]string{
			"--name", name, "--data-dir", dataDir,
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", name + "=" + peer,
			"--log-level", "warn",
		}, o.flags()...)
	},
}

var kvTarget = &target{
	name:      "kv",
	binary:    kvBinary,
	continuum: true,
	args: func(name, dataDir string, clientPort, _ int, o serverOptions) []string {
		client := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
		return append([]string{
			"kv", "--name", name, "--data-dir", dataDir,
			"--listen-client-urls", client, "--advertise-client-urls", client,
		}, o.flags()...)
	},
}

var targets = []*target{etcdTarget, kvTarget}

func init() {
	// CONTINUUM_COMPAT_KV=etcd puts a second etcd in the kv target's place: the suites
	// must then pass, which shows that they compare only what etcd itself keeps stable.
	if os.Getenv("CONTINUUM_COMPAT_KV") == "etcd" {
		self := *etcdTarget
		self.name = "kv"
		targets[1] = &self
		kvTarget = &self
	}
}

var continuum struct {
	once    sync.Once
	path    string
	err     error
	cleanup func()
}

// kvBinary returns the continuum binary if it has the kv command.
func kvBinary() (string, error) {
	continuum.once.Do(func() {
		continuum.path, continuum.cleanup, continuum.err = testenv.Binary()
		if continuum.err != nil {
			continuum.err = fmt.Errorf("continuum kv not available: %w", continuum.err)
			return
		}
		out, err := exec.Command(continuum.path, "kv", "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--data-dir") {
			continuum.err = fmt.Errorf("continuum kv not available: `continuum kv --help`: %v\n%s", err, out)
		}
	})
	return continuum.path, continuum.err
}

func TestMain(m *testing.M) {
	code := m.Run()
	if continuum.cleanup != nil {
		continuum.cleanup()
	}
	os.Exit(code)
}

// require skips or fails t when the target's binary is unavailable.
func (tg *target) require(t testing.TB) string {
	t.Helper()
	bin, err := tg.binary()
	if err != nil {
		requireOrSkip(t, err.Error())
	}
	return bin
}

// forEachTarget runs fn as a subtest per target.
func forEachTarget(t *testing.T, fn func(t *testing.T, tg *target)) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			tg.require(t)
			fn(t, tg)
		})
	}
}

// server is a running etcd or continuum kv member.
type server struct {
	tg       *target
	name     string
	dataDir  string
	endpoint string // host:port of the client URL
	args     []string
	bin      string
	proc     *process
}

// start starts a fresh member with its own data directory and ports, waits until it serves,
// and stops it at cleanup.
func (tg *target) start(t testing.TB, o serverOptions) *server {
	t.Helper()
	bin := tg.require(t)
	dir := t.TempDir()
	clientPort, peerPort := testenv.FreePort(t), testenv.FreePort(t)
	s := &server{
		tg:       tg,
		name:     "compat",
		dataDir:  filepath.Join(dir, "data"),
		endpoint: fmt.Sprintf("127.0.0.1:%d", clientPort),
		bin:      bin,
	}
	s.args = tg.args(s.name, s.dataDir, clientPort, peerPort, o)
	s.launch(t, filepath.Join(dir, "server.log"))
	t.Cleanup(func() {
		start := time.Now()
		s.proc.stop(10 * time.Second)
		if d := time.Since(start); d > 2*time.Second {
			t.Logf("%s took %v to exit after SIGTERM", tg.name, d.Round(time.Millisecond))
		}
		if t.Failed() {
			t.Logf("%s log tail:\n%s", tg.name, s.proc.logTail(30))
		}
	})
	return s
}

func startEtcd(t testing.TB, o serverOptions) *server { return etcdTarget.start(t, o) }
func startKV(t testing.TB, o serverOptions) *server   { return kvTarget.start(t, o) }

func (s *server) launch(t testing.TB, logPath string) {
	t.Helper()
	s.proc = startProcess(t, logPath, s.bin, s.args...)
	s.waitReady(t)
}

// restart starts the member again on the same data directory and ports; the previous
// process must have exited (killed or stopped).
func (s *server) restart(t testing.TB) {
	t.Helper()
	if !s.proc.exited() {
		t.Fatal("restart: the previous process is still running")
	}
	s.launch(t, s.proc.logPath)
}

// waitReady polls a linearizable Get until it succeeds, the process exits, or a deadline.
func (s *server) waitReady(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	// Wait for the listener first: a gRPC client dialled too early backs off for a second.
	for {
		conn, err := net.DialTimeout("tcp", s.endpoint, time.Second)
		if err == nil {
			conn.Close()
			break
		}
		if s.proc.exited() {
			t.Fatalf("%s exited before serving (%v); log:\n%s", s.tg.name, s.proc.waitErr, s.proc.logTail(30))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not listening on %s after 20s: %v; log:\n%s", s.tg.name, s.endpoint, err, s.proc.logTail(30))
		}
		<-tick.C
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints: []string{s.endpoint}, DialTimeout: time.Second, Logger: zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	defer c.Close()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_, err := c.Get(ctx, "health")
		cancel()
		if err == nil {
			return
		}
		if s.proc.exited() {
			t.Fatalf("%s exited before serving (%v); log:\n%s", s.tg.name, s.proc.waitErr, s.proc.logTail(30))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not serving on %s after 20s: %v; log:\n%s", s.tg.name, s.endpoint, err, s.proc.logTail(30))
		}
		<-tick.C
	}
}

// client returns a clientv3 client of s closed at cleanup. Message size limits are raised
// so that the server, not the client, decides about large requests.
func (s *server) client(t testing.TB) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:          []string{s.endpoint},
		DialTimeout:        5 * time.Second,
		MaxCallSendMsgSize: 8 << 20,
		MaxCallRecvMsgSize: 64 << 20,
		Logger:             zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testCtx is a context that ends at the test's end or after d.
func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
