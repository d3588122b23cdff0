package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the control plane's private PKI, written under Dir/pki. ECDSA P-256 keys throughout:
// every component accepts them (ES256 service-account tokens included), and generating them
// costs microseconds where RSA costs tens of milliseconds under -race.
type pki struct {
	dir string

	caCert *x509.Certificate
	caKey  crypto.Signer
	caPEM  []byte // also in ca.crt

	// Paths of the files the components read.
	caFile, caKeyFile         string
	servingCert, servingKey   string
	saPublicKey, saPrivateKey string
	// The API server's client certificate towards kubelets (logs, exec, port-forward).
	kubeletClientCert, kubeletClientKey string
	clients                             map[string]clientCert // by kubeconfig name
}

// clientCert is a client certificate and key in PEM.
type clientCert struct {
	certPEM, keyPEM []byte
}

// The identities the client certificates carry. The controller-manager's and scheduler's
// names are the users Kubernetes' bootstrap RBAC policy grants their permissions to;
// system:masters bypasses authorization, as kubeadm's admin.conf does.
var clientIdentities = map[string]pkix.Name{
	"admin":              {CommonName: "continuum-admin", Organization: []string{"system:masters"}},
	"controller-manager": {CommonName: "system:kube-controller-manager"},
	"scheduler":          {CommonName: "system:kube-scheduler"},
}

// newPKI generates the CA, the apiserver's serving certificate (valid for 127.0.0.1, localhost,
// the in-cluster names of the kubernetes Service and the addresses ips: its IP, where the
// apiserver listens), the service-account key pair and a client certificate per identity, and
// writes them under dir.
func newPKI(dir string, ips ...net.IP) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki dir: %w", err)
	}
	p := &pki{
		dir:          dir,
		caFile:       filepath.Join(dir, "ca.crt"),
		caKeyFile:    filepath.Join(dir, "ca.key"),
		servingCert:  filepath.Join(dir, "apiserver.crt"),
		servingKey:   filepath.Join(dir, "apiserver.key"),
		saPublicKey:  filepath.Join(dir, "sa.pub"),
		saPrivateKey: filepath.Join(dir, "sa.key"),

		kubeletClientCert: filepath.Join(dir, "apiserver-kubelet-client.crt"),
		kubeletClientKey:  filepath.Join(dir, "apiserver-kubelet-client.key"),
		clients:           map[string]clientCert{},
	}
	now := time.Now()
	caKey, err := newKey()
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "continuum-kubernetes-ca"},
		NotBefore:             now.Add(-time.Hour), // tolerate small clock differences
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("ca certificate: %w", err)
	}
	if p.caCert, err = x509.ParseCertificate(der); err != nil {
		return nil, err
	}
	p.caKey = caKey
	p.caPEM = pemCert(der)
	if err := writeCertKey(p.caFile, p.caKeyFile, p.caPEM, caKey); err != nil {
		return nil, err
	}

	serving := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: append([]net.IP{net.IPv4(127, 0, 0, 1)}, ips...),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	certPEM, key, err := p.sign(serving)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	if err := writeCertKey(p.servingCert, p.servingKey, certPEM, key); err != nil {
		return nil, err
	}

	saKey, err := newKey()
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.saPublicKey, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		return nil, fmt.Errorf("service-account public key: %w", err)
	}
	if err := writeKey(p.saPrivateKey, saKey); err != nil {
		return nil, err
	}

	// As kubeadm does: kubelets authenticate the API server's calls by this certificate and
	// authorize them through the API server, where system:masters may do anything.
	kcPEM, kcKey, err := p.sign(&x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, fmt.Errorf("kubelet client certificate: %w", err)
	}
	if err := writeCertKey(p.kubeletClientCert, p.kubeletClientKey, kcPEM, kcKey); err != nil {
		return nil, err
	}

	for name, subject := range clientIdentities {
		certPEM, key, err := p.sign(&x509.Certificate{
			SerialNumber: serial(),
			Subject:      subject,
			KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		})
		if err != nil {
			return nil, fmt.Errorf("%s client certificate: %w", name, err)
		}
		keyPEM, err := pemKey(key)
		if err != nil {
			return nil, err
		}
		p.clients[name] = clientCert{certPEM: certPEM, keyPEM: keyPEM}
	}
	return p, nil
}

// sign issues tmpl, with a fresh key, signed by the CA for ten years.
func (p *pki) sign(tmpl *x509.Certificate) (certPEM []byte, key *ecdsa.PrivateKey, err error) {
	key, err = newKey()
	if err != nil {
		return nil, nil, err
	}
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().AddDate(10, 0, 0)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, key.Public(), p.caKey)
	if err != nil {
		return nil, nil, err
	}
	return pemCert(der), key, nil
}

func newKey() (*ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	return k, nil
}

// serial is a random 128-bit serial number, as RFC 5280 recommends (unique per CA).
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func pemKey(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func writeKey(path string, k crypto.Signer) error {
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return fmt.Errorf("write %s: unsupported key type %T", path, k)
	}
	b, err := pemKey(ek)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("write key: %w", err)
	}
	return nil
}

func writeCertKey(certPath, keyPath string, certPEM []byte, key crypto.Signer) error {
	if err := os.WriteFile(certPath, certPEM, 0o644); err != nil {
		return fmt.Errorf("write certificate: %w", err)
	}
	return writeKey(keyPath, key)
}
