package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// NameMissingArgs makes every command under root that checks its arguments' count say which
// argument is missing, from the placeholders of its Use line ("run SCENARIO.yaml" gives
// "missing SCENARIO.yaml"), with the usage line, instead of cobra's bare "accepts 1 arg(s),
// received 0". Commands keep their own checks; only the error of a wrong count is reworded.
func NameMissingArgs(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if check := c.Args; check != nil {
			c.Args = func(cmd *cobra.Command, args []string) error {
				err := check(cmd, args)
				if err == nil || !strings.Contains(err.Error(), "arg(s)") {
					return err // cobra's count errors all say arg(s); others are the command's own
				}
				usage := strings.TrimSuffix(cmd.UseLine(), " [flags]")
				if required := requiredArgs(cmd.Use); len(args) < len(required) {
					return fmt.Errorf("missing %s (usage: %s)", strings.Join(required[len(args):], " "), usage)
				}
				return fmt.Errorf("%s: %w (usage: %s)", strings.Join(quoteAll(args), " "), err, usage)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// requiredArgs are the placeholders of a Use line that are neither optional ([...]) nor
// grouped alternatives ((...), {...}) nor a flag's value (--data-dir DIR): upper-case words,
// "..." dropped (a list needs one at least).
func requiredArgs(use string) []string {
	fields := strings.Fields(use)
	var out []string
	depth := 0
	for i := 1; i < len(fields); i++ {
		f := fields[i]
		if depth > 0 || strings.ContainsAny(f[:1], "[({") {
			depth += strings.Count(f, "[") + strings.Count(f, "(") + strings.Count(f, "{")
			depth -= strings.Count(f, "]") + strings.Count(f, ")") + strings.Count(f, "}")
			continue
		}
		if strings.HasPrefix(f, "-") {
			i++ // its value
			continue
		}
		if f[0] >= 'A' && f[0] <= 'Z' {
			out = append(out, strings.TrimSuffix(f, "..."))
		}
	}
	return out
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
