package server

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.uber.org/zap"
)

// tlsFiles names the files of one TLS identity with etcd's flag names, for errors: the client
// listeners' (--cert-file, ...) or the peers' (--peer-cert-file, ...).
type tlsFiles struct {
	flag           string // "" or "peer-"
	cert, key, ca  string
	clientCertAuth bool
	// selfSigned: cert is an auto TLS certificate. Peers' are self-signed too, so without a
	// trusted CA a member dials them without verifying their certificates (as etcd does).
	selfSigned bool
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
	} else if f.selfSigned {
		tc.InsecureSkipVerify = true
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

// selfSignedCerts generates the certificates --auto-tls and --peer-auto-tls ask for where no
// certificate files are given (etcd's ClientSelfCert and PeerSelfCert, with etcd's own
// transport.SelfCert: <data-dir>/fixtures/client and fixtures/peer, reused when present) and
// points c at them. It reports whether the peer certificate is a generated one.
func (c *Config) selfSignedCerts(log *slog.Logger) (peer bool, err error) {
	if c.AutoTLS {
		if c.CertFile != "" {
			log.Warn("ignoring --auto-tls: --cert-file and --key-file are given")
		} else if !anyHTTPS(c.ListenClientURLs, c.ListenMetricsURLs) {
			// etcd, too, serves http URLs in plain text under --auto-tls; say so rather than
			// claim https.
			log.Warn("ignoring --auto-tls: no client or metrics URL is https, so client traffic is served insecurely (plain http); use https:// URLs to encrypt it")
		} else {
			hosts := tlsHosts(c.ListenClientURLs, c.AdvertiseClientURLs, c.ListenMetricsURLs)
			info, err := transport.SelfCert(zap.NewNop(), filepath.Join(c.DataDir, "fixtures", "client"), hosts, c.SelfSignedCertValidity)
			if err != nil {
				return false, fmt.Errorf("--auto-tls: generate a certificate in %s: %w", filepath.Join(c.DataDir, "fixtures", "client"), err)
			}
			c.CertFile, c.KeyFile = info.CertFile, info.KeyFile
			log.Info("auto TLS: serving the https client URLs with a self-signed certificate", "cert-file", c.CertFile)
		}
	}
	if c.PeerAutoTLS && c.clustered() {
		if c.PeerCertFile != "" {
			log.Warn("ignoring --peer-auto-tls: --peer-cert-file and --peer-key-file are given")
		} else if !anyHTTPS(append([][]string{c.ListenPeerURLs}, slices.Collect(maps.Values(c.InitialCluster))...)...) {
			// The certificate is also this member's client certificate towards https peers,
			// so it is generated when any peer URL is https, not only this member's.
			log.Warn("ignoring --peer-auto-tls: no peer URL is https, so peer traffic is served insecurely (plain http); use https:// URLs to encrypt it")
		} else {
			advertise := c.AdvertisePeerURLs
			if len(advertise) == 0 {
				advertise = c.InitialCluster[c.Name]
			}
			dir := filepath.Join(c.DataDir, "fixtures", "peer")
			// Client auth too: the peer certificate is also this member's client certificate
			// towards its peers, and a peer with --peer-trusted-ca-file verifies it.
			info, err := transport.SelfCert(zap.NewNop(), dir, tlsHosts(c.ListenPeerURLs, advertise), c.SelfSignedCertValidity, x509.ExtKeyUsageClientAuth)
			if err != nil {
				return false, fmt.Errorf("--peer-auto-tls: generate a certificate in %s: %w", dir, err)
			}
			c.PeerCertFile, c.PeerKeyFile = info.CertFile, info.KeyFile
			peer = true
			log.Info("peer auto TLS: a self-signed peer certificate", "cert-file", c.PeerCertFile,
				"verify-peers", c.PeerTrustedCAFile != "")
		}
	}
	return peer, nil
}

// tlsHosts returns the distinct hosts of the URLs as host:port, as SelfCert takes them (it
// drops the port; a URL without one gets port 0, so that its host is not lost).
func tlsHosts(lists ...[]string) []string {
	var hosts []string
	seen := map[string]bool{}
	for _, list := range lists {
		for _, raw := range list {
			u, err := url.Parse(raw)
			if err != nil || u.Hostname() == "" || seen[u.Hostname()] {
				continue
			}
			seen[u.Hostname()] = true
			port := u.Port()
			if port == "" {
				port = "0"
			}
			hosts = append(hosts, net.JoinHostPort(u.Hostname(), port))
		}
	}
	return hosts
}

// anyHTTPS reports whether any of the URLs is https.
func anyHTTPS(lists ...[]string) bool {
	for _, list := range lists {
		for _, raw := range list {
			if u, err := url.Parse(raw); err == nil && u.Scheme == "https" {
				return true
			}
		}
	}
	return false
}
