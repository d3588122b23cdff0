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
	if !strings.Contains(out.String(), "--listen") || !strings.Contains(out.String(), "--node") {
		t.Fatalf("help lacks the flags:\n%s", out.String())
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
}
