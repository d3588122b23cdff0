// Package cluster brings up a Kubernetes cluster on this host, without Docker and without
// downloading anything: the control plane (internal/kubernetes/controlplane) on a continuum kv
// member or on etcd, containerd with runc and the CNI bridge plugin, kubelet, kube-proxy and
// CoreDNS, all as processes of one supervisor whose state lives in one directory. Images come as
// OCI tarballs (internal/kubernetes/image) imported into containerd, so pods run images built
// here; the sandbox ("pause") image is the continuum image itself.
//
// By default the cluster is one node in the host's namespaces. Given a topology (or a node
// count), the supervisor hosts a testbed of it (internal/testbed) and runs one node in each of
// its nodes, the control plane in one of them: every packet between nodes takes the testbed's
// emulated links, and the testbed's faults are the cluster's.
//
// Down removes everything Up made, also after the supervisor was killed: the processes (found
// through the state directory in their command lines, containerd's shims included, and in the
// cluster's cgroup subtree), the mounts under the state directory, the cgroups, the bridge and
// the network namespaces (of a multi-node cluster: its testbed), and the nftables table and
// iptables chains kube-proxy and the CNI plugins added. The host is left as it was, as
// `continuum testbed down` leaves it.
//
// It does not install anything: the binaries come from `make setup` (.tools/bin, and Debian's
// containerd, runc and CNI plugins).
package cluster
