package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/continuum-project/continuum/internal/setup"
	"github.com/continuum-project/continuum/internal/tools"
)

func init() { commands = append(commands, newSetupCmd) }

func newSetupCmd() *cobra.Command {
	var status, dryRun, yes bool
	c := &cobra.Command{
		Use:   "setup [STACK...|all] [--status] [--dry-run]",
		Short: "Install a system's stack (baselines, stream, functions, fl, kubernetes, test), or show what is installed",
		Long: `Continuum's core (the testbed, the quickstart, the report) needs only what make demo installs.
Each system that runs third-party software has a stack, installed on first use into the setup cache
($CONTINUUM_CACHE, default ~/.cache/continuum) and linked into the clone's .tools: a command or
scenario that needs a missing stack stops and names it (or installs it with --yes or
CONTINUUM_AUTO_SETUP=1, or when you say yes at a terminal). make setup installs them all.

Stacks: ` + strings.Join(setup.Names(), ", ") + `. Without a STACK, or with --status: what is installed, where,
how big, what needs it, and the host facts that matter (paste it into a bug report).`,
		Example: `  continuum setup --status            # every stack and this host, in one table
  continuum setup fl                  # the federated-learning venv (PyTorch, Flower)
  continuum setup --dry-run all       # what make setup would install here
  continuum setup all                 # everything (make setup)`,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if status || len(args) == 0 {
				if len(args) > 0 {
					return fmt.Errorf("--status shows every stack; give no STACK with it")
				}
				printSetupStatus(out)
				return nil
			}
			stacks, err := setup.Resolve(args)
			if err != nil {
				return err
			}
			root, err := setup.FindClone()
			if err != nil {
				return err
			}
			in := setup.NewInstaller(root, out, isTerminal(os.Stdout))
			if dryRun {
				for _, l := range in.Plan(stacks) {
					fmt.Fprintln(out, l)
				}
				return nil
			}
			_ = yes // asking is for commands that find a stack missing; naming it here is the yes
			return in.Install(cmd.Context(), stacks)
		},
	}
	c.Flags().BoolVar(&status, "status", false, "show every stack (installed or not, where, version, size, what needs it) and the host's facts")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "say what would be installed and change nothing")
	c.Flags().BoolVarP(&yes, "yes", "y", false, "accepted for scripts (naming a stack already says yes)")
	return c
}

// printSetupStatus writes the stacks' table and the host's facts.
func printSetupStatus(out io.Writer) {
	f := tools.Default()
	c := setup.DefaultChecker()
	c.Sizes = true
	home, _ := os.UserHomeDir()
	short := func(p string) string {
		if home != "" {
			if rel, err := filepath.Rel(home, p); err == nil && !strings.HasPrefix(rel, "..") {
				return "~/" + rel
			}
		}
		return p
	}
	tw := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "STACK\tSTATUS\tSIZE\tVERSION\tWHERE\tNEEDED BY")
	core := setup.DpkgInstalled(setup.Core)
	var coreMissing []string
	for _, p := range setup.Core {
		if !core[p] {
			coreMissing = append(coreMissing, p)
		}
	}
	h := setup.HostFacts(f.Cache)
	coreStatus := "installed"
	if len(coreMissing) > 0 {
		coreStatus = "missing " + strings.Join(coreMissing, " ") + " (run scripts/setup.sh)"
	}
	fmt.Fprintf(tw, "core\t%s\t-\t%s\tDebian packages, Go\tevery command (make demo installs it)\n", coreStatus, orNone(h.Go))
	// The checker names entries with the cache's links resolved (a cache on another disk).
	cacheReal, err := filepath.EvalSymlinks(h.Cache)
	if err != nil {
		cacheReal = h.Cache
	}
	for _, st := range c.Status(setup.Stacks) {
		state, size := "installed", setup.HumanBytes(st.Bytes)
		if !st.Installed() {
			state = "not installed: continuum setup " + st.Name
			size = "~" + setup.HumanBytes(st.Size) + " to add"
		}
		var where []string
		for _, w := range st.Where {
			if d := filepath.Dir(w); d == h.Cache || d == cacheReal {
				w = filepath.Base(w) // the cache is named once, below
			}
			where = append(where, short(w))
		}
		if len(st.Tools) == 0 && st.Installed() {
			size = "-"
		}
		if len(st.Apt) > 0 && len(where) == 0 {
			where = append(where, "Debian packages")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", st.Name, state, size, st.Version, strings.Join(where, " "), st.NeededBy)
	}
	_ = tw.Flush()
	netem := "no (links are emulated in userspace by the fabric, as always here)"
	if h.Netem {
		netem = "yes (the fabric emulates links in userspace all the same)"
	}
	fmt.Fprintf(out, "\nhost: %s, kernel %s, %d cores, %d MiB memory, cgroup %s, netem %s\n", h.OS, h.Kernel, h.Cores, h.MemoryMiB, h.Cgroup, netem)
	fmt.Fprintf(out, "cache (WHERE): %s (%s free; $CONTINUUM_CACHE moves it), clones: %s, go: %s, node: %s\n",
		short(h.Cache), setup.HumanBytes(h.FreeBytes), strings.Join(mapShort(f.Clones(), short), " "), orNone(h.Go), orNone(h.Node))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func mapShort(ps []string, f func(string) string) []string {
	if len(ps) == 0 {
		return []string{"none"}
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = f(p)
	}
	return out
}
