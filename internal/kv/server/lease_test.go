package server

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/continuum-project/continuum/internal/testenv"
)

func TestLease(t *testing.T) {
	_, cli := startKV(t)
	ctx := ctxT(t)
	g, err := cli.Grant(ctx, 60)
	if err != nil || g.TTL != 60 || g.ID == 0 {
		t.Fatalf("grant %v %+v", err, g)
	}
	if _, err := cli.Put(ctx, "a", "1", clientv3.WithLease(g.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "b", "1", clientv3.WithLease(g.ID)); err != nil {
		t.Fatal(err)
	}
	ttl, err := cli.TimeToLive(ctx, g.ID, clientv3.WithAttachedKeys())
	if err != nil || ttl.GrantedTTL != 60 || len(ttl.Keys) != 2 || string(ttl.Keys[0]) != "a" {
		t.Fatalf("ttl %v %+v", err, ttl)
	}
	ka, err := cli.KeepAliveOnce(ctx, g.ID)
	if err != nil || ka.TTL != 60 {
		t.Fatalf("keepalive %v %+v", err, ka)
	}
	ls, err := cli.Leases(ctx)
	if err != nil || len(ls.Leases) != 1 {
		t.Fatalf("leases %v %+v", err, ls)
	}
	rev, err := cli.Revoke(ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := cli.Get(ctx, "", clientv3.WithFromKey())
	if len(r.Kvs) != 0 || rev.Header.Revision != 4 {
		t.Fatalf("after revoke: %+v rev %d", r.Kvs, rev.Header.Revision)
	}
	if _, err := cli.Revoke(ctx, g.ID); !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		t.Fatalf("revoke twice: %v", err)
	}
	missing, err := cli.TimeToLive(ctx, 424242)
	if err != nil || missing.TTL != -1 {
		t.Fatalf("unknown lease ttl: %v %+v", err, missing)
	}
	if _, err := cli.Grant(ctx, mvccMaxTTL+1); !errors.Is(err, rpctypes.ErrLeaseTTLTooLarge) {
		t.Fatalf("ttl too large: %v", err)
	}

	// Expiry deletes attached keys.
	short, err := cli.Grant(ctx, 1) // raised to the 2 s minimum
	if err != nil || short.TTL != 2 {
		t.Fatalf("short grant %v %+v", err, short)
	}
	if _, err := cli.Put(ctx, "e", "1", clientv3.WithLease(short.ID)); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyNoError(t, 30*time.Second, "the key of an expired lease to go", func() error {
		r, err := cli.Get(ctx, "e")
		if err == nil && len(r.Kvs) != 0 {
			err = fmt.Errorf("still there: %+v", r.Kvs)
		}
		return err
	})
}

func TestLeasePersists(t *testing.T) {
	dir := t.TempDir()
	s, cli := startKV(t, func(c *Config) { c.DataDir = dir })
	ctx := ctxT(t)
	g, err := cli.Grant(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "k", "v", clientv3.WithLease(g.ID)); err != nil {
		t.Fatal(err)
	}
	cli.Close()
	s.Close()
	_, cli = startKV(t, func(c *Config) { c.DataDir = dir })
	ttl, err := cli.TimeToLive(ctx, g.ID, clientv3.WithAttachedKeys())
	if err != nil || ttl.GrantedTTL != 100 || len(ttl.Keys) != 1 {
		t.Fatalf("after restart %v %+v", err, ttl)
	}
}

const mvccMaxTTL = 9000000000
