package server

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/continuum-project/continuum/internal/testenv"
)

var (
	binOnce    sync.Once
	binPath    string
	binErr     error
	binCleanup = func() {} // removes a binary built by continuumBin; TestMain calls it
)

// continuumBin returns $CONTINUUM_BIN or a binary built once for this test process.
func continuumBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		var cleanup func()
		if binPath, cleanup, binErr = testenv.Binary(); binErr == nil {
			binCleanup = cleanup
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// startProcess starts `continuum kv` on dir and returns the process and a connected client.
func startProcess(t *testing.T, dir string) (*exec.Cmd, *clientv3.Client) {
	t.Helper()
	addr := testenv.FreeAddr(t)
	log, err := os.OpenFile(filepath.Join(dir, "..", "kv.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(continuumBin(t), "kv", "--data-dir", dir, "--listen-client-urls", "http://"+addr)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
	})
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	testenv.EventuallyNoError(t, 60*time.Second, "kv to serve", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := cli.Get(ctx, "health")
		return err
	})
	return cmd, cli
}

// TestKill9KeepsAcknowledgedWrites kills `continuum kv` with SIGKILL in the middle of a
// concurrent write load and checks, after a restart, that every acknowledged write is there.
func TestKill9KeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := filepath.Join(t.TempDir(), "data")
	cmd, cli := startProcess(t, dir)

	type ack struct {
		key, value string
		rev        int64
	}
	var mu sync.Mutex
	var acked []ack
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				k, v := fmt.Sprintf("w/%02d/%06d", g, i), fmt.Sprintf("v%d", i)
				var rev int64
				var err error
				if i%4 == 3 { // some writes as Txns of two keys
					var r *clientv3.TxnResponse
					r, err = cli.Txn(ctx).Then(clientv3.OpPut(k, v), clientv3.OpPut(k+"/t", v)).Commit()
					if err == nil {
						rev = r.Header.Revision
					}
				} else {
					var r *clientv3.PutResponse
					r, err = cli.Put(ctx, k, v)
					if err == nil {
						rev = r.Header.Revision
					}
				}
				if err != nil {
					return
				}
				mu.Lock()
				acked = append(acked, ack{k, v, rev})
				if i%4 == 3 {
					acked = append(acked, ack{k + "/t", v, rev})
				}
				mu.Unlock()
			}
		}()
	}
	// Kill once a few thousand writes are acknowledged.
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 3000 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	stop()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(acked) == 0 {
		t.Fatal("no write acknowledged before the kill")
	}

	_, cli2 := startProcess(t, dir)
	rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	all, err := cli2.Get(rctx, "w/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	for _, kv := range all.Kvs {
		got[string(kv.Key)] = kv.Value
	}
	var maxRev int64
	for _, a := range acked {
		v, ok := got[a.key]
		if !ok || !bytes.Equal(v, []byte(a.value)) {
			t.Fatalf("acknowledged write %s=%s (revision %d) lost after kill -9: got %q, %v", a.key, a.value, a.rev, v, ok)
		}
		maxRev = max(maxRev, a.rev)
	}
	if all.Header.Revision < maxRev {
		t.Fatalf("revision went back: %d after restart, %d acknowledged", all.Header.Revision, maxRev)
	}
	t.Logf("%d acknowledged writes survived kill -9 (%d keys present, revision %d)", len(acked), len(got), all.Header.Revision)
	// The store keeps working after recovery.
	if _, err := cli2.Put(rctx, "after", "crash"); err != nil {
		t.Fatal(err)
	}
}
