package agent

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSample(t *testing.T) {
	_, c := startAgent(t)
	ctx := testCtx(t)
	data := t.TempDir()
	// Not zeros: a compressing file system would allocate less than 1 MiB for them.
	blob := make([]byte, 1<<20)
	for i := range blob {
		blob[i] = byte(i*7 + i>>8)
	}
	if err := os.WriteFile(filepath.Join(data, "blob"), blob, 0o644); err != nil {
		t.Fatal(err)
	}
	req := sh("busy", "while :; do :; done")
	req.DataDirs = []string{data}
	if _, err := c.Start(ctx, req); err != nil {
		t.Fatal(err)
	}
	find := func(s Sample) InstanceSample {
		for _, in := range s.Instances {
			if in.Name == "busy" {
				return in
			}
		}
		t.Fatalf("no busy instance in %+v", s)
		return InstanceSample{}
	}
	first, err := c.Sample(ctx)
	if err != nil {
		t.Fatal(err)
	}
	in := find(first)
	if !in.Running || in.Run != 1 || in.RSS <= 0 || in.Disk < 1<<20 {
		t.Fatalf("sample %+v; want running run 1, RSS > 0, Disk >= 1 MiB", in)
	}
	if first.RSS <= 0 || first.CPUSeconds <= 0 {
		t.Fatalf("pod totals %+v; want CPU and memory", first)
	}
	eventually(t, "the busy loop's CPU to grow", func() bool {
		s, err := c.Sample(ctx)
		return err == nil && find(s).CPUSeconds > in.CPUSeconds
	})
	ex, err := c.Stop(ctx, "busy", 0)
	if err != nil || ex.Signal != "killed" {
		t.Fatalf("Stop = %+v, %v", ex, err)
	}
	// After the run exits its CPU stays counted.
	last, err := c.Sample(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := find(last); got.Running || got.CPUSeconds < in.CPUSeconds {
		t.Fatalf("after exit %+v; want not running and CPU kept (>= %v)", got, in.CPUSeconds)
	}
}

func TestParseNetDev(t *testing.T) {
	text := `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0          0
  eth0: 2000      20    0    0    0     0          0         0     3000      30    0    0    0     0       0          0
 net1:  5 1 0 0 0 0 0 0 7 2 0 0 0 0 0 0
`
	nd, err := parseNetDev([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if nd != (netDev{rxBytes: 2005, rxPackets: 21, txBytes: 3007, txPackets: 32}) {
		t.Fatalf("parseNetDev = %+v", nd)
	}
	if _, err := parseNetDev([]byte("garbage")); err == nil {
		t.Fatal("no error for a file without header")
	}
	b, err := os.ReadFile("/proc/net/dev")
	if err != nil {
		t.Skip(err)
	}
	if _, err := parseNetDev(b); err != nil {
		t.Fatalf("this host's /proc/net/dev: %v", err)
	}
}

func TestCgroupFiles(t *testing.T) {
	v2 := t.TempDir()
	os.WriteFile(filepath.Join(v2, "cpu.stat"), []byte("usage_usec 2500000\nuser_usec 1\n"), 0o644)
	os.WriteFile(filepath.Join(v2, "memory.current"), []byte("4096\n"), 0o644)
	if c, ok := cgroupCPU(v2); !ok || c != 2.5 {
		t.Errorf("v2 cpu = %v, %v", c, ok)
	}
	if m, ok := cgroupMemory(v2); !ok || m != 4096 {
		t.Errorf("v2 memory = %v, %v", m, ok)
	}
	v1 := t.TempDir()
	os.MkdirAll(filepath.Join(v1, "cpuacct"), 0o755)
	os.MkdirAll(filepath.Join(v1, "memory"), 0o755)
	os.WriteFile(filepath.Join(v1, "cpuacct", "cpuacct.usage"), []byte("1500000000\n"), 0o644)
	os.WriteFile(filepath.Join(v1, "memory", "memory.usage_in_bytes"), []byte("10000\n"), 0o644)
	os.WriteFile(filepath.Join(v1, "memory", "memory.stat"), []byte("cache 3000\nrss 7000\ntotal_cache 4000\n"), 0o644)
	if c, ok := cgroupCPU(v1); !ok || c != 1.5 {
		t.Errorf("v1 cpu = %v, %v", c, ok)
	}
	if m, ok := cgroupMemory(v1); !ok || m != 6000 {
		t.Errorf("v1 memory = %v, %v; want usage minus total_cache", m, ok)
	}
	if _, ok := cgroupCPU(t.TempDir()); ok {
		t.Error("cpu from an empty dir")
	}
}

func TestParsePgrp(t *testing.T) {
	pg, err := parsePgrp([]byte("42 (a) b) (c) S 1 42 42 0 -1"))
	if err != nil || pg != 42 {
		t.Fatalf("parsePgrp = %d, %v", pg, err)
	}
	if _, err := parsePgrp([]byte("42 nope")); err == nil {
		t.Fatal("no error without a command name")
	}
}
