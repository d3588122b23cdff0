package server

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// hashOf calls the deprecated Maintenance.Hash, which clientv3 does not wrap.
func hashOf(ctx context.Context, t *testing.T, cli *clientv3.Client) (uint32, int64) {
	t.Helper()
	r, err := pb.NewMaintenanceClient(cli.ActiveConnection()).Hash(ctx, &pb.HashRequest{})
	if err != nil {
		t.Fatalf("Hash: %v", err)
	}
	return r.Hash, r.Header.Revision
}

// Hash covers the whole history: it is stable while nothing changes (also across a restart and
// in a copy restored from a snapshot), and changes with a write and with a compaction, which
// leaves HashKV (live data only) as it was.
func TestMaintenanceHash(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	s, cli := startKV(t, func(c *Config) { c.DataDir = dataDir })
	ctx := ctxT(t)
	for _, kv := range [][2]string{{"a", "1"}, {"b", "1"}, {"a", "2"}} {
		if _, err := cli.Put(ctx, kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	h1, rev1 := hashOf(ctx, t, cli)
	h2, rev2 := hashOf(ctx, t, cli)
	if h1 != h2 || rev1 != rev2 || rev1 != 5 {
		t.Fatalf("no writes between two hashes, yet %08x@%d then %08x@%d (want the same, at revision 5)", h1, rev1, h2, rev2)
	}

	if _, err := cli.Put(ctx, "c", "1"); err != nil {
		t.Fatal(err)
	}
	h3, rev3 := hashOf(ctx, t, cli)
	if h3 == h1 || rev3 != rev1+1 {
		t.Fatalf("after a put: %08x@%d, before: %08x@%d (want another hash, one revision on)", h3, rev3, h1, rev1)
	}

	// A snapshot restored into a new data directory holds the same records.
	snapFile := filepath.Join(t.TempDir(), "backup.snap")
	rc, err := cli.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(snapFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, rc); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	if err := RestoreSnapshot(snapFile, restored); err != nil {
		t.Fatal(err)
	}
	_, rcli := startKV(t, func(c *Config) { c.DataDir = restored })
	if h, rev := hashOf(ctx, t, rcli); h != h3 || rev != rev3 {
		t.Fatalf("restored copy: %08x@%d, original: %08x@%d", h, rev, h3, rev3)
	}

	// A restart reads the same records back.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, cli = startKV(t, func(c *Config) { c.DataDir = dataDir })
	if h, rev := hashOf(ctx, t, cli); h != h3 || rev != rev3 {
		t.Fatalf("after a restart: %08x@%d, before: %08x@%d", h, rev, h3, rev3)
	}

	// Compaction removes history (a=1 and b's versions) but no live data.
	kv1, err := cli.HashKV(ctx, cli.Endpoints()[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, rev3, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	kv2, err := cli.HashKV(ctx, cli.Endpoints()[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := hashOf(ctx, t, cli); h == h3 || kv1.Hash != kv2.Hash {
		t.Fatalf("compaction: Hash %08x -> %08x (want a change), HashKV %08x -> %08x (want none)", h3, h, kv1.Hash, kv2.Hash)
	}
}
