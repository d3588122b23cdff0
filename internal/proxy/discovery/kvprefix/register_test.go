package kvprefix

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/continuum-project/continuum/internal/proxy/discovery"
)

// TestRegister follows a self-registered service: it appears with its fields, comes back by
// itself when its lease is revoked behind its back, and leaves at once on Close.
func TestRegister(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ep := b.start(t)
			cli := newClient(t, ep)
			ctx := ctxT(t)
			src, logs := newSource(t, ep, prefix)
			r := runSource(t, src, logs)
			r.Next()

			inst := discovery.Instance{ID: "dps-1", Service: "dps", URL: "http://10.0.0.3:8080", Node: "worker3",
				Attributes: map[string]string{"accuracy": "0.97"}, Ready: true}
			reg, err := Register(ctx, cli, prefix, inst, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if reg.Key() != prefix+"dps/dps-1" {
				t.Fatalf("key %q", reg.Key())
			}
			r.WaitFor("registered instance", func(s discovery.Snapshot) bool {
				got, ok := find(s, "dps", "dps-1")
				return ok && got.URL == inst.URL && got.Node == "worker3" && got.Attributes["accuracy"] == "0.97" && got.Ready
			})

			// The record is what Run reads back: the same JSON shape as discovery.Instance.
			resp, err := cli.Get(ctx, reg.Key())
			if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease == 0 {
				t.Fatalf("record %v %v", resp, err)
			}
			var back discovery.Instance
			if err := json.Unmarshal(resp.Kvs[0].Value, &back); err != nil || back.ID != inst.ID || back.Service != inst.Service {
				t.Fatalf("record value %s: %v", resp.Kvs[0].Value, err)
			}

			first := reg.currentLease()
			if _, err := cli.Revoke(ctx, first); err != nil {
				t.Fatal(err)
			}
			r.WaitFor("deregistered by the revoke", func(s discovery.Snapshot) bool { _, ok := find(s, "dps", "dps-1"); return !ok })
			r.WaitFor("registered again", func(s discovery.Snapshot) bool { _, ok := find(s, "dps", "dps-1"); return ok })
			resp, err = cli.Get(ctx, reg.Key())
			if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease == 0 || resp.Kvs[0].Lease == int64(first) {
				t.Fatalf("record after re-registration %v %v (revoked lease %x)", resp, err, first)
			}

			if err := reg.Close(); err != nil {
				t.Fatal(err)
			}
			// Close revoked the lease: gone now, not after the TTL.
			r.WaitFor("gone after Close", func(s discovery.Snapshot) bool { _, ok := find(s, "dps", "dps-1"); return !ok })
			if err := reg.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			select {
			case <-reg.Done():
			default:
				t.Fatal("Done not closed after Close")
			}
		})
	}
}

// TestRegisterEndsWithContext: cancelling Register's context ends the registration too.
func TestRegisterEndsWithContext(t *testing.T) {
	t.Parallel()
	ep := startKV(t)
	cli := newClient(t, ep)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg, err := Register(ctx, cli, prefix, discovery.Instance{ID: "a", Service: "svc", URL: "http://10.0.0.1:80", Ready: true}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-reg.Done():
	case <-time.After(waitTimeout):
		t.Fatal("registration still running after its context ended")
	}
	resp, err := cli.Get(ctxT(t), reg.Key())
	if err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("record left behind: %v %v", resp.Kvs, err)
	}
}

func TestRegisterValidation(t *testing.T) {
	ok := discovery.Instance{ID: "a", Service: "svc", URL: "http://10.0.0.1:80"}
	tests := []struct {
		name   string
		prefix string
		inst   func(discovery.Instance) discovery.Instance
		ttl    time.Duration
		want   string
	}{
		{"prefix without slash", "/services", nil, time.Second, "prefix"},
		{"no service", prefix, func(i discovery.Instance) discovery.Instance { i.Service = ""; return i }, time.Second, "service"},
		{"service with a slash", prefix, func(i discovery.Instance) discovery.Instance { i.Service = "a/b"; return i }, time.Second, "service"},
		{"no id", prefix, func(i discovery.Instance) discovery.Instance { i.ID = ""; return i }, time.Second, "id"},
		{"bad url", prefix, func(i discovery.Instance) discovery.Instance { i.URL = "10.0.0.1:80"; return i }, time.Second, "url"},
		{"no ttl", prefix, nil, 0, "ttl"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inst := ok
			if tc.inst != nil {
				inst = tc.inst(inst)
			}
			// Validation happens before the client is used, so none is needed.
			_, err := Register(context.Background(), nil, tc.prefix, inst, tc.ttl)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one about %s", err, tc.want)
			}
		})
	}
}
