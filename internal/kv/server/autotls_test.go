package server

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/continuum-project/continuum/internal/testenv"
)

// With --auto-tls and no certificate files, https client URLs serve a generated self-signed
// certificate: a client that skips verification (etcdctl --insecure-skip-tls-verify) or trusts
// that very certificate is served, a client that verifies against its usual roots is not.
func TestAutoTLSClient(t *testing.T) {
	s, _ := startKV(t, func(c *Config) {
		c.ListenClientURLs = []string{"https://127.0.0.1:0"}
		c.AutoTLS = true
	})
	certFile := filepath.Join(s.cfg.DataDir, "fixtures", "client", "cert.pem")
	pem, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatalf("--auto-tls wrote no certificate: %v", err)
	}
	pinned := x509.NewCertPool()
	if !pinned.AppendCertsFromPEM(pem) {
		t.Fatalf("%s: no PEM certificate", certFile)
	}
	ep := strings.TrimPrefix(s.ClientURLs()[0], "https://")
	ctx := ctxT(t)
	for name, tc := range map[string]*tls.Config{
		"insecure-skip-verify":        {InsecureSkipVerify: true},
		"trusting the generated cert": {RootCAs: pinned},
	} {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(), TLS: tc})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := cli.Put(ctx, "k", name); err != nil {
			t.Fatalf("%s: put over auto TLS: %v", name, err)
		}
		if r, err := cli.Get(ctx, "k"); err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != name {
			t.Fatalf("%s: get over auto TLS: %+v %v", name, r, err)
		}
		cli.Close()
	}
	strict, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: time.Second, Logger: zap.NewNop(),
		TLS: &tls.Config{RootCAs: x509.NewCertPool()}})
	if err == nil {
		defer strict.Close()
		shortCtx, cancel := ctxWithTimeout(2 * time.Second)
		defer cancel()
		if _, err := strict.Get(shortCtx, "k"); err == nil {
			t.Fatal("a client verifying the server's certificate accepted a self-signed one")
		}
	}
}

// Members with --peer-auto-tls and https peer URLs replicate without certificate files. Without
// --peer-trusted-ca-file a member does not verify its peers (m0); with it, it does: m1 trusts
// m0's generated certificate and pulls from it, mx trusts a CA that signed nothing here and gets
// nothing.
func TestPeerAutoTLS(t *testing.T) {
	dir := t.TempDir()
	otherCA, _, _, _ := writeCert(t, dir, "other-ca", nil, nil)
	addrs := freePorts(t, 3)
	ic := map[string][]string{"m0": {"https://" + addrs[0]}, "m1": {"https://" + addrs[1]}}
	start := func(name string, ic map[string][]string, ca string) (*Server, *clientv3.Client) {
		return startKV(t, func(c *Config) {
			c.Name, c.InitialCluster, c.InitialClusterToken, c.ListenPeerURLs = name, ic, "auto-tls", ic[name]
			c.PeerAutoTLS, c.PeerTrustedCAFile = true, ca
		})
	}
	s0, c0 := start("m0", ic, "")
	m0Cert := filepath.Join(s0.cfg.DataDir, "fixtures", "peer", "cert.pem")
	if _, err := os.Stat(m0Cert); err != nil {
		t.Fatalf("--peer-auto-tls wrote no certificate: %v", err)
	}
	_, c1 := start("m1", ic, m0Cert)
	icx := map[string][]string{"m0": ic["m0"], "mx": {"https://" + addrs[2]}}
	sx, cx := start("mx", icx, otherCA)

	ctx := ctxT(t)
	if _, err := c0.Put(ctx, "from-m0", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := c1.Put(ctx, "from-m1", "v"); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		cli *clientv3.Client
		key string
	}{{c1, "from-m0"}, {c0, "from-m1"}} {
		testenv.EventuallyNoError(t, 30*time.Second, w.key+" replicated over peer auto TLS", func() error {
			r, err := w.cli.Get(ctx, w.key)
			if err == nil && len(r.Kvs) != 1 {
				err = fmt.Errorf("%d keys", len(r.Kvs))
			}
			return err
		})
	}
	requireRefusedPeer(t, sx, cx, "from-m0")
}

func TestAutoTLSValidate(t *testing.T) {
	ic := map[string][]string{"m0": {"https://127.0.0.1:2380"}, "m1": {"https://127.0.0.1:2381"}}
	for _, tc := range []struct {
		name    string
		cluster bool // https peer URLs
		change  func(*Config)
		want    string // "" for valid
	}{
		{"https client URL with --auto-tls", false, func(c *Config) { c.AutoTLS = true }, ""},
		{"https client URL without certificate", false, func(c *Config) {}, "or --auto-tls"},
		{"https peer URL with --peer-auto-tls", true, func(c *Config) { c.AutoTLS, c.PeerAutoTLS = true, true }, ""},
		{"https peer URL without certificate", true, func(c *Config) { c.AutoTLS = true }, "or --peer-auto-tls"},
		{"validity 0", true, func(c *Config) { c.AutoTLS, c.PeerAutoTLS, c.SelfSignedCertValidity = true, true, 0 }, "--self-signed-cert-validity"},
	} {
		cfg := DefaultConfig()
		cfg.DataDir, cfg.ListenClientURLs = t.TempDir(), []string{"https://127.0.0.1:0"}
		if tc.cluster {
			cfg.Name, cfg.InitialCluster, cfg.ListenPeerURLs = "m0", ic, ic["m0"]
		}
		tc.change(&cfg)
		err := cfg.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v (want %q)", tc.name, err, tc.want)
		}
	}
}
