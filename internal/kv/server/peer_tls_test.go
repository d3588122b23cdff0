package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/continuum-project/continuum/internal/testenv"
)

// Members replicate over https peer URLs with mutual TLS (etcd's --peer-* flags); a member whose
// certificate the others' CA did not sign gets nothing, and bad peer TLS settings are refused.
func TestPeerTLS(t *testing.T) {
	dir := t.TempDir()
	_, _, caCert, caKey := writeCert(t, dir, "ca", nil, nil)
	caFile := dir + "/ca.crt"
	_, _, otherCA, otherKey := writeCert(t, dir, "other-ca", nil, nil)
	addrs := freePorts(t, 3)
	ic := map[string][]string{"m0": {"https://" + addrs[0]}, "m1": {"https://" + addrs[1]}}
	start := func(name string, ic map[string][]string, signer string) (*Server, *clientv3.Client) {
		parent, parentKey := caCert, caKey
		if signer == "other-ca" {
			parent, parentKey = otherCA, otherKey
		}
		cert, key, _, _ := writeCert(t, dir, name, parent, parentKey)
		return startKV(t, func(c *Config) {
			c.Name, c.InitialCluster, c.InitialClusterToken, c.ListenPeerURLs = name, ic, "tls", ic[name]
			c.PeerCertFile, c.PeerKeyFile, c.PeerTrustedCAFile, c.PeerClientCertAuth = cert, key, caFile, true
		})
	}
	_, c0 := start("m0", ic, "ca")
	_, c1 := start("m1", ic, "ca")
	// An intruder with a certificate from another CA names m0 as its peer.
	icx := map[string][]string{"m0": ic["m0"], "mx": {"https://" + addrs[2]}}
	sx, cx := start("mx", icx, "other-ca")
	ctx := ctxT(t)
	if _, err := c0.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyNoError(t, 30*time.Second, "m1 to get m0's write over TLS", func() error {
		r, err := c1.Get(ctx, "k")
		if err == nil && len(r.Kvs) != 1 {
			err = fmt.Errorf("%d keys", len(r.Kvs))
		}
		return err
	})
	// The intruder's pulls from m0 fail on the certificate, and it has none of the data.
	requireRefusedPeer(t, sx, cx, "k")

	for name, change := range map[string]func(*Config){
		"https peer URL without a certificate": func(c *Config) { c.PeerCertFile, c.PeerKeyFile = "", "" },
		"key without certificate":              func(c *Config) { c.PeerCertFile = "" },
		"client cert auth without a CA":        func(c *Config) { c.PeerTrustedCAFile = "" },
	} {
		cfg := DefaultConfig()
		cfg.Name, cfg.DataDir, cfg.InitialCluster, cfg.ListenPeerURLs = "m0", t.TempDir(), ic, ic["m0"]
		cfg.PeerCertFile, cfg.PeerKeyFile, cfg.PeerTrustedCAFile, cfg.PeerClientCertAuth = "a.crt", "a.key", caFile, true
		change(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--peer-") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// requireRefusedPeer waits until s, a member with one peer, reports a certificate error from it,
// then checks that s's client cli does not see key, which the peer holds.
func requireRefusedPeer(t *testing.T, s *Server, cli *clientv3.Client, key string) {
	t.Helper()
	testenv.EventuallyNoError(t, 30*time.Second, "a certificate error from the peer", func() error {
		if ps := s.repl.Peers(); len(ps) != 1 || !strings.Contains(ps[0].LastErr, "certificate") {
			return fmt.Errorf("a member that cannot verify its peer's certificate reports: %+v", ps)
		}
		return nil
	})
	if r, err := cli.Get(ctxT(t), key); err != nil || len(r.Kvs) != 0 {
		t.Fatalf("a member that cannot verify its peer got its data (%q): %+v %v", key, r, err)
	}
}
