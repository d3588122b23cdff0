package server

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Flags etcd refuses are refused here too, on a single member as on a cluster, with a message
// that names the flag and what it accepts.
func TestFlagsEtcdRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		mod  func(*Config)
		want string
	}{
		"cluster state on a single member": {func(c *Config) { c.InitialClusterState = "maybe" }, `--initial-cluster-state "maybe": want new or existing`},
		"compaction mode, compaction off":  {func(c *Config) { c.AutoCompactionMode = "weekly" }, `--auto-compaction-mode "weekly": unknown mode, want periodic or revision`},
		"compaction mode, compaction on": {func(c *Config) { c.AutoCompactionMode, c.AutoCompactionRetention = "weekly", "1h" },
			`--auto-compaction-mode "weekly"`},
	} {
		cfg := DefaultConfig()
		cfg.DataDir = t.TempDir()
		tc.mod(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, tc.want)
		}
	}
}

func TestInitialClusterDuplicates(t *testing.T) {
	for in, want := range map[string]string{
		"a=http://h:1,b=http://h:1": `has duplicate url http://h:1 (under "a" and "b")`,
		"a=http://h:1,a=http://h:1": `has duplicate url http://h:1 (under "a" and "a")`,
		"a=http://h:1,a=http://h:2": "", // one member with two peer URLs, as etcd reads it
	} {
		ic, err := ParseInitialCluster(in)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", in, err)
		case want == "" && len(ic["a"]) != 2:
			t.Errorf("%s: member a has URLs %v, want both", in, ic["a"])
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want an error containing %q", in, err, want)
		}
	}
}

// --auto-tls with only http URLs serves http, as etcd does, and says so instead of claiming
// https; no certificate is generated.
func TestAutoTLSOnHTTPSaysSo(t *testing.T) {
	var logs bytes.Buffer
	s, _ := startKV(t, func(c *Config) {
		c.AutoTLS = true
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	if u := s.ClientURLs()[0]; !strings.HasPrefix(u, "http://") {
		t.Fatalf("client URL %s, want http", u)
	}
	out := logs.String()
	if !strings.Contains(out, "ignoring --auto-tls") || !strings.Contains(out, "insecurely") {
		t.Errorf("log does not say --auto-tls is ignored on http:\n%s", out)
	}
	if strings.Contains(out, "serving the https") {
		t.Errorf("log claims https:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(s.cfg.DataDir, "fixtures", "client")); err == nil {
		t.Errorf("a certificate was generated for http URLs")
	}
}

// A second member on a data dir in use fails at once, naming the process that holds it; once
// the first closes, the directory is free again.
func TestDataDirInUse(t *testing.T) {
	dir := t.TempDir()
	first, _ := startKV(t, func(c *Config) { c.DataDir = dir })
	_, _, err := tryStartKV(t, func(c *Config) { c.DataDir = dir })
	want := fmt.Sprintf("data dir %q in use by process %d", dir, os.Getpid())
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("second member on the same data dir: %v, want an error containing %q", err, want)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	s, cli, err := tryStartKV(t, func(c *Config) { c.DataDir = dir })
	if err != nil {
		t.Fatalf("after the first member closed: %v", err)
	}
	cli.Close()
	s.Close()
}
