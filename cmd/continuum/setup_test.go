package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/experiment"
	"github.com/continuum-project/continuum/internal/experiment/kind"
	"github.com/continuum-project/continuum/internal/setup"
	"github.com/continuum-project/continuum/internal/testbed"
)

// Every stack a kind names is in the catalog, so that `run` can install it.
func TestKindsNeedKnownStacks(t *testing.T) {
	for _, k := range kind.All() {
		if _, err := setup.Resolve(k.Stacks); err != nil {
			t.Errorf("kind %s: %v", k.Name, err)
		}
	}
}

// make demo's path installs no system stack: its scenario needs none, make demo runs the core
// setup only, and the core's dry run on an empty cache plans no stack and writes nothing.
func TestQuickstartInstallsNoStack(t *testing.T) {
	needs, err := experiment.Stacks("../../scenarios/quickstart.yaml", experiment.Options{Platform: testbed.Provider{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(needs) != 0 {
		t.Errorf("the quickstart needs the stacks %v; make demo installs none", needs)
	}
	out, err := exec.Command("make", "-C", "../..", "-n", "demo").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n demo: %v\n%s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, " setup ") || strings.Contains(l, "--stack") {
			t.Errorf("make demo would run %q: it must install the core only", l)
		}
	}
	if !strings.Contains(string(out), "./scripts/setup.sh\n") {
		t.Errorf("make demo does not run the core setup:\n%s", out)
	}
	cache := t.TempDir()
	cmd := exec.Command("bash", "scripts/setup.sh", "--dry-run")
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "CONTINUUM_CACHE="+cache)
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("setup.sh --dry-run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "system stacks: none") {
		t.Errorf("setup.sh --dry-run does not say it installs no stack:\n%s", out)
	}
	if ents, _ := os.ReadDir(cache); len(ents) != 0 {
		t.Errorf("the dry run wrote into the cache: %v", ents)
	}
}

// On a machine without the fl stack (a binary outside any clone, an empty cache), running the
// seed's FL scenario stops before starting anything, naming the command that installs it; the
// quickstart is checked fine in the same place.
func TestRunStopsOnMissingStack(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	lone := filepath.Join(dir, "continuum")
	copyFile(t, bin, lone)
	abs, err := filepath.Abs("../../scenarios")
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(lone, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CONTINUUM_CACHE="+cache, "CONTINUUM_AUTO_SETUP=", "CONTINUUM_STATE_DIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, args := range [][]string{
		{"run", filepath.Join(abs, "fl", "seed-orchestration.yaml"), "--out", dir},
		{"run", "--check", filepath.Join(abs, "fl", "seed-orchestration.yaml")},
	} {
		out, err := run(args...)
		if err == nil || !strings.Contains(out, "`continuum setup fl`") || !strings.Contains(out, "GiB") {
			t.Errorf("continuum %s: %v, want a refusal naming `continuum setup fl` and its size:\n%s", strings.Join(args, " "), err, out)
		}
		if ents, _ := os.ReadDir(cache); len(ents) != 0 {
			t.Errorf("continuum %s installed something: %v", strings.Join(args, " "), ents)
		}
	}
	if out, err := run("run", "--check", filepath.Join(abs, "quickstart.yaml")); err != nil {
		t.Errorf("run --check quickstart without any stack: %v\n%s", err, out)
	}
	out, err := run("setup", "--status")
	if err != nil || !strings.Contains(out, "not installed: continuum setup fl") || !strings.Contains(out, "host: ") {
		t.Errorf("setup --status on an empty cache: %v\n%s", err, out)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// run --check installs nothing, whatever else says yes: with CONTINUUM_AUTO_SETUP=1, from a
// clone whose setup script and apt-get only leave a mark, checking the FL seed (whose stack is
// missing) refuses and runs neither.
func TestRunCheckInstallsNothingWithAutoSetup(t *testing.T) {
	clone, cache, fake := t.TempDir(), t.TempDir(), t.TempDir()
	mk := func(path, text string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	mk(filepath.Join(clone, "go.mod"), "module github.com/continuum-project/continuum\n\ngo 1.26\n", 0o644)
	mk(filepath.Join(clone, setup.Script), "#!/usr/bin/env bash\necho ran >\"$CONTINUUM_CACHE/script-ran\"; exit 1\n", 0o755)
	mk(filepath.Join(fake, "apt-get"), "#!/bin/sh\necho ran >\""+cache+"/apt-ran\"; exit 1\n", 0o755)
	lone := filepath.Join(clone, "bin", "continuum")
	if err := os.MkdirAll(filepath.Dir(lone), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, bin, lone)
	scenario, err := filepath.Abs("../../scenarios/fl/seed-orchestration.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(lone, "run", "--check", scenario)
	cmd.Dir = clone
	cmd.Env = append(os.Environ(), "CONTINUUM_CACHE="+cache, "CONTINUUM_AUTO_SETUP=1", "CONTINUUM_STATE_DIR="+t.TempDir(),
		"PATH="+fake+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "`continuum setup fl`") {
		t.Errorf("run --check with %s=1: %v, want a refusal naming `continuum setup fl`:\n%s", setup.AutoEnv, err, out)
	}
	for _, mark := range []string{"script-ran", "apt-ran"} {
		if _, err := os.Stat(filepath.Join(cache, mark)); err == nil {
			t.Errorf("run --check with %s=1 installed: %s", setup.AutoEnv, mark)
		}
	}
}

// A cache reached through a link (~/.cache/continuum on another disk) is named once, below the
// table; its entries are named by their own names in WHERE, as a cache that is no link.
func TestSetupStatusNamesEntriesOfALinkedCache(t *testing.T) {
	dir, real := t.TempDir(), t.TempDir()
	venv := filepath.Join(real, "venv-0123456789abcdef-py3.11")
	if err := os.MkdirAll(filepath.Join(venv, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"bin/python", ".complete"} {
		if err := os.WriteFile(filepath.Join(venv, f), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cache := filepath.Join(dir, "cache")
	if err := os.Symlink(real, cache); err != nil {
		t.Fatal(err)
	}
	lone := filepath.Join(dir, "continuum")
	copyFile(t, bin, lone)
	cmd := exec.Command(lone, "setup", "--status")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CONTINUUM_CACHE="+cache)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("setup --status: %v\n%s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "functions ") && (!strings.Contains(l, " venv-0123456789abcdef-py3.11 ") || strings.Contains(l, real)) {
			t.Errorf("functions' WHERE names the linked cache's entry by its full path, want its name:\n%s", l)
		}
	}
}
