package controlplane

import (
	"fmt"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfigs writes <dir>/<identity>.kubeconfig for every client identity, with the CA
// and the client certificate embedded so that each file is usable on its own (kubectl --kubeconfig,
// helm, the proxy's discovery).
func writeKubeconfigs(dir, server string, p *pki) (map[string]string, error) {
	paths := map[string]string{}
	for name, cc := range p.clients {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["continuum"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: p.caPEM}
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cc.certPEM, ClientKeyData: cc.keyPEM}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "continuum", AuthInfo: name}
		cfg.CurrentContext = name
		path := filepath.Join(dir, name+".kubeconfig")
		if err := clientcmd.WriteToFile(*cfg, path); err != nil {
			return nil, fmt.Errorf("write kubeconfig %s: %w", path, err)
		}
		paths[name] = path
	}
	return paths, nil
}

// restConfig is the admin's client configuration for server.
func restConfig(server string, p *pki) *rest.Config {
	admin := p.clients["admin"]
	return &rest.Config{
		Host: server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   p.caPEM,
			CertData: admin.certPEM,
			KeyData:  admin.keyPEM,
		},
		// client-go's defaults (5 qps, burst 10) throttle a test that creates objects in a
		// loop; the apiserver's own flow control is what should push back.
		QPS:   200,
		Burst: 400,
	}
}
