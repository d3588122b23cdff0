package benchkit

import (
	"fmt"
	"os"
	"strings"
)

// CommandLine joins a command's arguments as a shell needs them typed (names with spaces are
// quoted), for the "Regenerate with" line.
func CommandLine(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`!*?;&|<>()[]{}#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// MiB renders a byte count in MiB with one decimal: "12.3 MiB".
func MiB[T int64 | float64](bytes T) string { return fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20)) }

// YesNo renders a per-row check in a table: "yes", or a bold "**no**" that stands out.
func YesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// OneLine makes an error message fit a table cell or a list item: one line, at most n bytes.
func OneLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}

// Invocation is this process's command line as `continuum ...` typed in a shell, for a result's
// "Regenerate with" line.
func Invocation() string {
	return CommandLine(append([]string{"continuum"}, os.Args[1:]...))
}
