// Package cli is the registry of the continuum binary's commands and what they share. A
// system's commands live in its own folder (internal/<system>/<system>cmd) and add themselves
// here in init(), as kinds add themselves to package kind; cmd/continuum builds the root command
// from the registry and keeps only the engine's commands (run, report, testbed, load, bench,
// version). Where a kind starts `continuum <command>`, it renders the command line with Args from
// the same flag declaration the command parses, so a flag's name and default are written once.
//
// It is a leaf: it imports cobra and pflag, nothing of the project.
package cli

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/cobra"
)

// Top is the parent of top-level commands.
const Top = ""

var (
	mu       sync.Mutex
	registry = map[string][]func() *cobra.Command{}
)

// Register adds a command constructor under parent: Top for `continuum NAME`, or the name of an
// engine command group ("bench", "load") for `continuum bench NAME`. Constructors run once per
// root command built.
func Register(parent string, ctor func() *cobra.Command) {
	if ctor == nil {
		panic("cli.Register: nil constructor")
	}
	mu.Lock()
	defer mu.Unlock()
	registry[parent] = append(registry[parent], ctor)
}

// EngineGroup is the help group of the engine's top-level commands (run, report, kinds,
// testbed, load, bench, setup, ...): `continuum --help` lists it first, then a group per system.
const EngineGroup = "engine"

// RegisterSystem adds a top-level command of system (its folder under internal/, "kv"):
// `continuum --help` lists it in the system's group. A helper that a kind runs and a user
// rarely types (container-run, kafka-topics) is registered so too and set Hidden.
func RegisterSystem(system string, ctor func() *cobra.Command) {
	if system == "" || system == EngineGroup {
		panic(fmt.Sprintf("cli.RegisterSystem: bad system %q", system))
	}
	Register(Top, func() *cobra.Command {
		c := ctor()
		c.GroupID = system
		return c
	})
}

// Deprecated is ctor's command under its old name, hidden from help and saying, when run,
// which command to use instead (`continuum stream-bridge` after it moved to `continuum stream
// bridge`), so that old scripts keep working.
func Deprecated(old, now string, ctor func() *cobra.Command) func() *cobra.Command {
	return func() *cobra.Command {
		c := ctor()
		c.Use = old + strings.TrimPrefix(c.Use, c.Name())
		c.Hidden = true
		c.Deprecated = "use " + now
		c.GroupID = ""
		return c
	}
}

// AddGroups gives root's help its groups: the engine's first, then one per system that has a
// command under root, by name. Every command of root must be in one of them or hidden.
func AddGroups(root *cobra.Command) {
	root.AddGroup(&cobra.Group{ID: EngineGroup, Title: "Engine commands (scenarios, runs, reports, platforms):"})
	var systems []string
	for _, c := range root.Commands() {
		if c.Hidden {
			c.GroupID = "" // help lists no hidden command: its system's group may have none to show
			continue
		}
		if c.GroupID != "" && c.GroupID != EngineGroup && !slices.Contains(systems, c.GroupID) {
			systems = append(systems, c.GroupID)
		}
	}
	sort.Strings(systems)
	for _, s := range systems {
		root.AddGroup(&cobra.Group{ID: s, Title: "System " + s + ":"})
	}
	root.SetHelpCommandGroupID(EngineGroup)
}

// Commands builds the commands registered under parent, sorted by name; it panics when two
// have the same name (a programming error).
func Commands(parent string) []*cobra.Command {
	mu.Lock()
	ctors := append([]func() *cobra.Command(nil), registry[parent]...)
	mu.Unlock()
	out := make([]*cobra.Command, 0, len(ctors))
	seen := map[string]bool{}
	for _, ctor := range ctors {
		c := ctor()
		if seen[c.Name()] {
			panic(fmt.Sprintf("cli.Register: two commands %q under %q", c.Name(), parent))
		}
		seen[c.Name()] = true
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// ExitCode makes the process exit with that status and no message (e.g. `testbed exec` passing
// on the status of the command it ran).
type ExitCode int

func (e ExitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// Logger is the structured logger of long-running commands (servers); CONTINUUM_LOG=debug makes
// it chatty.
func Logger() *slog.Logger { return newLogger(slog.LevelInfo) }

// QuietLogger logs warnings and errors only unless CONTINUUM_LOG=debug, for commands that draw
// their own progress.
func QuietLogger() *slog.Logger { return newLogger(slog.LevelWarn) }

func newLogger(level slog.Level) *slog.Logger {
	if os.Getenv("CONTINUUM_LOG") == "debug" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}
