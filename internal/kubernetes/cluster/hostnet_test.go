package cluster

import (
	"slices"
	"testing"
)

func TestSplitRule(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`-A POSTROUTING -j CNI-HOSTPORT-MASQ`, []string{"-A", "POSTROUTING", "-j", "CNI-HOSTPORT-MASQ"}},
		{`-A PREROUTING -m comment --comment "kube hostport portals" -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT`,
			[]string{"-A", "PREROUTING", "-m", "comment", "--comment", "kube hostport portals", "-m", "addrtype", "--dst-type", "LOCAL", "-j", "CNI-HOSTPORT-DNAT"}},
		{`-A X -m comment --comment "say \"hi\"" -j Y`, []string{"-A", "X", "-m", "comment", "--comment", `say "hi"`, "-j", "Y"}},
		{`-A X -m comment --comment "" -j Y`, []string{"-A", "X", "-m", "comment", "--comment", "", "-j", "Y"}},
	} {
		if got := splitRule(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("splitRule(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/var/lib/a\040b`); got != "/var/lib/a b" {
		t.Fatalf("got %q", got)
	}
}

func TestIsDaemon(t *testing.T) {
	root := "/var/lib/continuum/cluster"
	for _, tc := range []struct {
		argv []string
		want bool
	}{
		{[]string{"containerd", "--config", root + "/containerd/config.toml"}, true},
		{[]string{"/usr/bin/containerd-shim-runc-v2", "-namespace", "k8s.io", "-id", "x", "-address", root + "/containerd/containerd.sock"}, true},
		{[]string{"/repo/bin/continuum", "kv", "--name", "cluster", "--data-dir", root + "/store"}, true},
		{[]string{"/repo/.tools/bin/kube-apiserver", "--cert-dir=" + root + "/control-plane/apiserver"}, true},
		// The supervisor and the command running Down are not swept as daemons.
		{[]string{"/repo/bin/continuum", "cluster", "up", "--foreground", "--state-dir", root}, false},
		{[]string{"/repo/bin/continuum", "cluster", "down", "--state-dir", root}, false},
		// Another cluster's daemons are not ours.
		{[]string{"containerd", "--config", root + "2/containerd/config.toml"}, false},
		{[]string{"vim", root + "/state.json"}, false},
	} {
		if got := isDaemon(tc.argv, root); got != tc.want {
			t.Errorf("isDaemon(%q) = %v, want %v", tc.argv, got, tc.want)
		}
	}
}
