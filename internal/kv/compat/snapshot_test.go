package compat

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/continuum-project/continuum/internal/testenv"
)

// `etcdctl snapshot save` against continuum kv writes a snapshot that etcdctl accepts (its size
// and SHA-256 checks), `continuum kv snapshot restore` restores it into a new data directory,
// and a member started there serves the same keys at the same revision under a member id of its
// own. A corrupt snapshot is refused.
func TestSnapshotSaveRestore(t *testing.T) {
	ctl, err := toolBinary("CONTINUUM_ETCDCTL_BIN", "etcdctl")
	if err != nil {
		requireOrSkip(t, err.Error())
	}
	s := startKV(t, serverOptions{})
	cli := s.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 200; i++ {
		if _, err := cli.Put(ctx, fmt.Sprintf("snap/%03d", i), strings.Repeat("v", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Delete(ctx, "snap/1", clientv3.WithPrefix()); err != nil { // snap/100..199
		t.Fatal(err)
	}
	// A user and a role travel with the snapshot (etcd's snapshot holds its auth store too).
	if _, err := cli.UserAdd(ctx, "alice", "pw"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.RoleAdd(ctx, "readers"); err != nil {
		t.Fatal(err)
	}
	before, err := cli.Get(ctx, "snap/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	status, err := cli.Status(ctx, s.endpoint)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "backup.snap")
	out, err := exec.CommandContext(ctx, ctl, "--endpoints", s.endpoint, "snapshot", "save", file).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Snapshot saved at") {
		t.Fatalf("etcdctl snapshot save: %v\n%s", err, out)
	}
	restored := filepath.Join(dir, "restored")
	if out, err := exec.CommandContext(ctx, s.bin, "kv", "snapshot", "restore", file, "--data-dir", restored).CombinedOutput(); err != nil {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	if out, err := exec.CommandContext(ctx, s.bin, "kv", "snapshot", "restore", file, "--data-dir", restored).CombinedOutput(); err == nil || !strings.Contains(string(out), "not empty") {
		t.Fatalf("restore into a used data dir: %v\n%s", err, out)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	corrupt := filepath.Join(dir, "corrupt.snap")
	if err := os.WriteFile(corrupt, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, s.bin, "kv", "snapshot", "restore", corrupt, "--data-dir", filepath.Join(dir, "x")).CombinedOutput(); err == nil || !strings.Contains(string(out), "SHA-256 mismatch") {
		t.Fatalf("restore of a corrupt snapshot: %v\n%s", err, out)
	}

	// A member on the restored data directory.
	port := testenv.FreePort(t)
	r := &server{tg: s.tg, name: "restored", dataDir: restored, endpoint: fmt.Sprintf("127.0.0.1:%d", port), bin: s.bin,
		args: []string{"kv", "--name", "restored", "--data-dir", restored, "--listen-client-urls", fmt.Sprintf("http://127.0.0.1:%d", port)}}
	r.launch(t, filepath.Join(dir, "restored.log"))
	t.Cleanup(func() { r.proc.stop(10 * time.Second) })
	rcli := r.client(t)
	after, err := rcli.Get(ctx, "snap/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Kvs) != len(before.Kvs) || len(after.Kvs) != 100 {
		t.Fatalf("restored member has %d keys, the original %d (want 100)", len(after.Kvs), len(before.Kvs))
	}
	for i := range after.Kvs {
		a, b := after.Kvs[i], before.Kvs[i]
		if string(a.Key) != string(b.Key) || string(a.Value) != string(b.Value) || a.ModRevision != b.ModRevision || a.Version != b.Version {
			t.Fatalf("restored %s=%q rev %d, original %s=%q rev %d", a.Key, a.Value, a.ModRevision, b.Key, b.Value, b.ModRevision)
		}
	}
	rstatus, err := rcli.Status(ctx, r.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if rstatus.Header.Revision != status.Header.Revision {
		t.Fatalf("restored revision %d, original %d", rstatus.Header.Revision, status.Header.Revision)
	}
	if rstatus.Header.MemberId == status.Header.MemberId {
		t.Fatalf("restored member kept the original's id %x", status.Header.MemberId)
	}
	if _, err := rcli.Put(ctx, "snap/new", "x"); err != nil {
		t.Fatalf("restored member does not take writes: %v", err)
	}
	users, err := rcli.UserList(ctx)
	if err != nil || strings.Join(users.Users, ",") != "alice" {
		t.Fatalf("restored users %v (%v), want alice", users, err)
	}
	roles, err := rcli.RoleList(ctx)
	if err != nil || strings.Join(roles.Roles, ",") != "readers" {
		t.Fatalf("restored roles %v (%v), want readers", roles, err)
	}
}
