package controlplane

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"path/filepath"
	"regexp"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// CAFile is the CA certificate that signs the API server's serving certificate and every
// client certificate; kubelet verifies the API server's calls against it.
func (cp *ControlPlane) CAFile() string { return cp.pki.caFile }

var fileSafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// IssueKubeconfig signs a client certificate for user in groups (Kubernetes reads the
// certificate's CommonName as the user and its Organizations as the groups) and writes a
// kubeconfig for it beside the others, with the API server at server (empty: the address the
// control plane's own kubeconfigs use). It returns the file's path. kubelet gets one for
// system:node:<name> in system:nodes, which the Node authorizer recognises.
func (cp *ControlPlane) IssueKubeconfig(user string, groups []string, server string) (string, error) {
	if user == "" {
		return "", fmt.Errorf("issue kubeconfig: empty user name")
	}
	if server == "" {
		server = cp.server
	}
	certPEM, key, err := cp.pki.sign(&x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: user, Organization: groups},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return "", fmt.Errorf("client certificate for %s: %w", user, err)
	}
	keyPEM, err := pemKey(key)
	if err != nil {
		return "", err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["continuum"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: cp.pki.caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts[user] = &clientcmdapi.Context{Cluster: "continuum", AuthInfo: user}
	cfg.CurrentContext = user
	path := filepath.Join(cp.cfg.Dir, fileSafe.ReplaceAllString(user, "_")+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return path, nil
}
