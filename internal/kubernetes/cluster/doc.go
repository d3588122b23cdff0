// Package cluster brings up a one-node Kubernetes cluster on this host, without Docker and without
// downloading anything: the control plane (internal/kubernetes/controlplane) on a continuum kv
// member or on etcd, containerd with runc and the CNI bridge plugin, kubelet, kube-proxy and
// CoreDNS, all as processes of one supervisor whose state lives in one directory. Images come as
// OCI tarballs (internal/kubernetes/image) imported into containerd, so pods run images built
// here; the sandbox ("pause") image is the continuum image itself.
//
// Down removes everything Up made, also after the supervisor was killed: the processes (found
// through the state directory in their command lines, containerd's shims included), the mounts
// under the state directory, the cgroup subtree, the bridge and the network namespaces, and the
// nftables table and iptables chains kube-proxy and the CNI plugins added. The host is left as
// it was, as `continuum testbed down` leaves it.
//
// It does not install anything: the binaries come from `make setup` (.tools/bin, and Debian's
// containerd, runc and CNI plugins).
package cluster
