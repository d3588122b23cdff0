package server

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// tlsFiles names the files of one TLS identity with etcd's flag names, for errors: the client
// listeners' (--cert-file, ...) or the peers' (--peer-cert-file, ...).
type tlsFiles struct {
	flag           string // "" or "peer-"
	cert, key, ca  string
	clientCertAuth bool
}

// serverConfig is the TLS configuration of a listener: its certificate, and with a trusted CA
// the client certificates it verifies (required with clientCertAuth). nil: no certificate.
func (f tlsFiles) serverConfig() (*tls.Config, error) {
	if f.cert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(f.cert, f.key)
	if err != nil {
		return nil, fmt.Errorf("load --%scert-file/--%skey-file: %w", f.flag, f.flag, err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if f.ca != "" {
		pool, err := f.pool()
		if err != nil {
			return nil, err
		}
		tc.ClientCAs = pool
		if f.clientCertAuth {
			tc.ClientAuth = tls.RequireAndVerifyClientCert
		} else {
			tc.ClientAuth = tls.VerifyClientCertIfGiven
		}
	}
	return tc, nil
}

// clientConfig is the TLS configuration for dialing with this identity (as etcd, a member uses
// its peer certificate as its client certificate towards other members): the certificate if
// any, and the trusted CA (the system's roots without one).
func (f tlsFiles) clientConfig() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.cert != "" {
		cert, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return nil, fmt.Errorf("load --%scert-file/--%skey-file: %w", f.flag, f.flag, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if f.ca != "" {
		pool, err := f.pool()
		if err != nil {
			return nil, err
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

func (f tlsFiles) pool() (*x509.CertPool, error) {
	pem, err := os.ReadFile(f.ca)
	if err != nil {
		return nil, fmt.Errorf("--%strusted-ca-file: %w", f.flag, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--%strusted-ca-file %q: no PEM certificates", f.flag, f.ca)
	}
	return pool, nil
}
