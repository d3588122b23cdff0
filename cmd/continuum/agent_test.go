package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestKubernetesAgentCommand(t *testing.T) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"kubernetes-agent", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--listen", "--node", "--state-dir", "--probe"} {
		if !strings.Contains(out.String(), flag) {
			t.Fatalf("help lacks %s:\n%s", flag, out.String())
		}
	}
	root = newRootCmd()
	out.Reset()
	root.SetOut(&out)
	root.SetArgs([]string{"--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "kubernetes-agent") {
		t.Fatalf("kubernetes-agent shows in the command list:\n%s", out.String())
	}
	// It refuses to listen where more than a port-forward would reach it.
	root = newRootCmd()
	root.SetArgs([]string{"kubernetes-agent", "--listen", "0.0.0.0:0"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("--listen 0.0.0.0:0 = %v; want a refusal naming loopback", err)
	}
}
