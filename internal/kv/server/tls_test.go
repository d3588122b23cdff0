package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/continuum-project/continuum/internal/testenv"
)

// writeCert writes a certificate (signed by parent, or self-signed CA when parent is nil) and its
// key as PEM files and returns them with the certificate and key.
func writeCert(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (certFile, keyFile string, cert *x509.Certificate, key *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
	}
	signer, signerKey := tmpl, key
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	} else {
		signer, signerKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ = x509.ParseCertificate(der)
	kb, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return certFile, keyFile, cert, key
}

func TestTLSClientCertAuthAndMetrics(t *testing.T) {
	dir := t.TempDir()
	caFile, _, ca, caKey := writeCert(t, dir, "ca", nil, nil)
	srvCert, srvKey, _, _ := writeCert(t, dir, "server", ca, caKey)
	cliCert, cliKey, _, _ := writeCert(t, dir, "client", ca, caKey)
	metricsAddr := testenv.FreeAddr(t)
	s, _ := startKV(t, func(c *Config) {
		c.ListenClientURLs = []string{"https://127.0.0.1:0"}
		c.ListenMetricsURLs = []string{"http://" + metricsAddr}
		c.CertFile, c.KeyFile, c.TrustedCAFile, c.ClientCertAuth = srvCert, srvKey, caFile, true
	})
	ep := strings.TrimPrefix(s.ClientURLs()[0], "https://")
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	pair, err := tls.LoadX509KeyPair(cliCert, cliKey)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	good, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		TLS: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}})
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	if _, err := good.Put(ctx, "secure", "yes"); err != nil {
		t.Fatalf("client with a certificate: %v", err)
	}
	bad, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: time.Second, Logger: zap.NewNop(),
		TLS: &tls.Config{RootCAs: pool}})
	if err == nil {
		defer bad.Close()
		shortCtx, cancel := ctxWithTimeout(2 * time.Second)
		defer cancel()
		if _, err := bad.Get(shortCtx, "secure"); err == nil {
			t.Fatal("client without a certificate was served")
		}
	}

	for path, want := range map[string]string{"/health": `{"health":"true","reason":""}`, "/metrics": "etcd_debugging_mvcc_current_revision 2"} {
		resp, err := http.Get("http://" + metricsAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
}
