// Package etcdtest starts servers of the etcd v3 API as processes for tests: etcd itself
// (Start), or continuum kv (StartKV) for the tests of engine packages, which may not import
// the kv system (the layering rules; a system's tests start an in-process member with
// package kv/kvtest instead). Each server gets fresh loopback ports and a data dir under
// t.TempDir(), and is killed at the test's cleanup; a missing binary skips the test, or fails
// it under CONTINUUM_REQUIRE_ROOT=1 (`make test`).
package etcdtest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/deathsig"
	"github.com/continuum-project/continuum/internal/testenv"
)

// Start starts a single-member etcd ($CONTINUUM_ETCD_BIN, or the nearest .tools/bin/etcd
// above the working directory, from `continuum setup`) and returns its client URL.
func Start(t testing.TB) string {
	t.Helper()
	etcd, err := Binary()
	if err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	return start(t, "etcd", func(client, peer, metrics string) []string {
		return []string{etcd, "--name", "test", "--data-dir", filepath.Join(t.TempDir(), "data"),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", "test=" + peer, "--listen-metrics-urls", metrics, "--log-level", "warn"}
	})
}

// StartKV starts `continuum kv` ($CONTINUUM_BIN, or one built for the test) and returns its
// client URL.
func StartKV(t testing.TB) string {
	t.Helper()
	bin, cleanup, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	return start(t, "continuum kv", func(client, _, metrics string) []string {
		return []string{bin, "kv", "--name", "test", "--data-dir", filepath.Join(t.TempDir(), "data"),
			"--listen-client-urls", client, "--advertise-client-urls", client, "--listen-metrics-urls", metrics}
	})
}

// Binary is $CONTINUUM_ETCD_BIN or the nearest .tools/bin/etcd above the working directory.
func Binary() (string, error) {
	if p := os.Getenv("CONTINUUM_ETCD_BIN"); p != "" {
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		p := filepath.Join(d, ".tools", "bin", "etcd")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("etcd not found in .tools/bin above %s: run `continuum setup` or set $CONTINUUM_ETCD_BIN", wd)
		}
	}
}

// start runs the command args gives for fresh client, peer and metrics URLs until /health on
// the metrics URL answers 200. Ports picked free can be taken before the server binds them:
// a start that fails with "address already in use" is tried again, on new ports.
func start(t testing.TB, name string, args func(client, peer, metrics string) []string) string {
	t.Helper()
	for attempt := 1; ; attempt++ {
		client, peer, metrics := loopbackURL(t), loopbackURL(t), loopbackURL(t)
		logPath := filepath.Join(t.TempDir(), "server.log")
		exited, stop := launch(t, name, logPath, args(client, peer, metrics))
		healthy := testenv.Poll(60*time.Second, func() bool {
			select {
			case <-exited:
				return true
			default:
			}
			resp, err := http.Get(metrics + "/health")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
		select {
		case <-exited:
		default:
			if healthy {
				return client
			}
		}
		stop()
		log := logEnd(logPath)
		if attempt == 3 || !strings.Contains(log, "address already in use") {
			t.Fatalf("%s did not answer /health on %s; its log ends:\n%s", name, metrics, log)
		}
	}
}

func loopbackURL(t testing.TB) string { return "http://" + testenv.FreeAddr(t) }

// launch starts args with its output in logPath, in its own process group, which stop (also
// run at cleanup) kills; exited is closed once the process has exited. The kernel kills it too
// if the test binary dies first, so a crashed test leaves no server holding its ports.
func launch(t testing.TB, name, logPath string, args []string) (exited <-chan struct{}, stop func()) {
	t.Helper()
	lf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := deathsig.Start(cmd); err != nil {
		cancel()
		lf.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		lf.Close()
		close(done)
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return done, stop
}

// logEnd is the last 4 KiB of a server's log, for failure messages.
func logEnd(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(b[max(0, len(b)-4096):])
}
