package kind

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// BySystem returns every registered kind sorted by system, then by name (`continuum kinds`).
func BySystem() []*Kind {
	ks := All()
	sort.SliceStable(ks, func(i, j int) bool { return ks[i].System < ks[j].System })
	return ks
}

// WriteList writes ks as `continuum kinds` lists them: a block per system, and per kind its
// role, summary, config keys and doc link.
func WriteList(w io.Writer, ks []*Kind) error {
	system := "\x00"
	for _, k := range ks {
		if k.System != system {
			if system != "\x00" {
				fmt.Fprintln(w)
			}
			system = k.System
			fmt.Fprintln(w, orDash(system))
		}
		fmt.Fprintf(w, "  %s (%s)\n", k.Name, k.Role)
		fmt.Fprintf(w, "      %s\n", k.Summary)
		if len(k.OldNames) > 0 {
			fmt.Fprintf(w, "      formerly: %s\n", strings.Join(k.OldNames, ", "))
		}
		var keys []string
		for _, key := range k.Keys() {
			if !strings.ContainsAny(key.Name, ".[") { // top-level keys; `continuum kinds NAME` lists all
				keys = append(keys, key.Name)
			}
		}
		fmt.Fprintf(w, "      keys: %s\n", orDash(strings.Join(keys, ", ")))
		fmt.Fprintf(w, "      doc:  %s\n", orDash(k.Doc))
	}
	_, err := fmt.Fprintln(w)
	return err
}

// WriteDetail writes one kind as `continuum kinds NAME` shows it: everything WriteList says
// and every config key (nested ones too) with its type and default.
func WriteDetail(w io.Writer, k *Kind) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "kind:\t%s\n", k.Name)
	fmt.Fprintf(tw, "system:\t%s\n", orDash(k.System))
	fmt.Fprintf(tw, "role:\t%s\n", k.Role)
	fmt.Fprintf(tw, "summary:\t%s\n", k.Summary)
	if len(k.OldNames) > 0 {
		fmt.Fprintf(tw, "formerly:\t%s (still accepted, with a warning)\n", strings.Join(k.OldNames, ", "))
	}
	if len(k.Stacks) > 0 {
		fmt.Fprintf(tw, "stacks:\t%s (continuum setup)\n", strings.Join(k.Stacks, ", "))
	}
	if k.Set != nil {
		fmt.Fprintf(tw, "run-time changes:\tyes (event action set)\n")
	}
	fmt.Fprintf(tw, "doc:\t%s\n", orDash(k.Doc))
	if err := tw.Flush(); err != nil {
		return err
	}
	keys := k.Keys()
	if len(keys) == 0 {
		_, err := fmt.Fprintln(w, "\nconfig: none")
		return err
	}
	fmt.Fprintln(w, "\nconfig:")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  KEY\tTYPE\tDEFAULT")
	for _, key := range keys {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", key.Name, key.Type, key.Default)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
