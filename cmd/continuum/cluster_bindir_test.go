package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestClusterBinDirOutsideAClone: run from outside a clone, `cluster up` finds the Kubernetes
// binaries, CoreDNS and etcd in their own setup-cache directories and links them into one.
func TestClusterBinDirOutsideAClone(t *testing.T) {
	cache := t.TempDir()
	for dir, names := range map[string][]string{
		"kubernetes-abc-go1": {"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"},
		"coredns-def-go1":    {"coredns"},
		"etcd-123-go1":       {"etcd"},
	} {
		for _, n := range names {
			p := filepath.Join(cache, dir, n)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Setenv("CONTINUUM_CACHE", cache)
	t.Setenv("CONTINUUM_KUBE_BIN", "")
	t.Chdir(t.TempDir()) // no clone above
	state := t.TempDir()
	bin, err := clusterBinDir(state)
	if err != nil {
		t.Fatal(err)
	}
	if bin != filepath.Join(state, "bin") {
		t.Fatalf("bin dir %s, want the links in %s/bin", bin, state)
	}
	for _, n := range []string{"kube-apiserver", "kubelet", "coredns", "etcd"} {
		if _, err := os.Stat(filepath.Join(bin, n)); err != nil {
			t.Errorf("%s not in %s: %v", n, bin, err)
		}
	}
}
