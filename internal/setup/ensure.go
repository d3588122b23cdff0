package setup

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
)

// AutoEnv is the environment variable that, set to 1, has commands install the stacks they need
// without asking (as --yes does).
const AutoEnv = "CONTINUUM_AUTO_SETUP"

// EnsureOptions says how a command that needs stacks may get them.
type EnsureOptions struct {
	Who string // what needs them, for the message: "scenario fl-seed", "cluster up"
	Yes bool   // install without asking (--yes)
	// NoInstall only looks (run --check): a missing stack is an error whatever would otherwise
	// say yes, $CONTINUUM_AUTO_SETUP included.
	NoInstall bool
	// In and Interactive: when In is a terminal, the user is asked (y/N).
	In          io.Reader
	Interactive bool
	Out         io.Writer // the question and the installer's lines
	Checker     *Checker  // nil: DefaultChecker()
	Root        string    // the clone to install from; "": FindClone()
}

// Ensure returns once the named stacks (names or aliases) are installed. Missing ones are
// installed when o.Yes or $CONTINUUM_AUTO_SETUP=1, or when the user says yes at the prompt;
// otherwise it fails at once (wrapping ErrMissing) naming each missing stack, its size and time,
// and the command that installs them. It only looks (dpkg's database, the .tools links): fast
// enough to run before anything starts.
func Ensure(ctx context.Context, names []string, o EnsureOptions) error {
	c := DefaultChecker()
	if o.Checker != nil {
		c = *o.Checker
	}
	missing, err := c.Missing(names)
	if err != nil || len(missing) == 0 {
		return err
	}
	var stacks []Stack
	var parts, cmdNames []string
	for _, m := range missing {
		stacks = append(stacks, m.Stack)
		cmdNames = append(cmdNames, m.Name)
		est := estimateFor(c.Finder.Cache, m.Stack)
		parts = append(parts, fmt.Sprintf("%s: %s (~%s, ~%s %s; missing %s)", m.Name, m.Summary, HumanBytes(m.Size), humanDuration(est.Time), est.where(), m.Missing()))
	}
	what := fmt.Sprintf("%s needs %s not installed:\n  %s", o.Who, map[bool]string{true: "a stack", false: "stacks"}[len(missing) == 1], strings.Join(parts, "\n  "))
	install := !o.NoInstall && (o.Yes || autoSetup())
	if !install && !o.NoInstall && o.Interactive && o.In != nil {
		fmt.Fprintf(o.Out, "%s\nInstall now with `%s`? [y/N] ", what, Command(cmdNames))
		line, _ := bufio.NewReader(o.In).ReadString('\n')
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			install = true
		default:
			return missingError(fmt.Sprintf("%s not installed (answered no): run `%s` first", strings.Join(cmdNames, ", "), Command(cmdNames)))
		}
	}
	if !install {
		return missingError(fmt.Sprintf("%s\nRun `%s` first (or pass --yes, or set %s=1, to install it now)", what, Command(cmdNames), AutoEnv))
	}
	root := o.Root
	if root == "" {
		if root, err = FindClone(); err != nil {
			return err
		}
	}
	in := NewInstaller(root, o.Out, o.Interactive)
	in.Checker = c
	if c.Finder.Cache != "" {
		in.Cache = c.Finder.Cache
	}
	return in.Install(ctx, stacks)
}

// missingError is Ensure's refusal: errors.Is(err, ErrMissing) holds.
type missingError string

func (e missingError) Error() string        { return string(e) }
func (e missingError) Is(target error) bool { return target == ErrMissing }

// autoSetup reports whether $CONTINUUM_AUTO_SETUP says yes: 1, true or yes (any case), as people
// write a boolean in the environment; anything else, unset included, is no.
func autoSetup() bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv(AutoEnv))) {
	case "1", "true", "yes":
		return true
	}
	return false
}
