package report

import (
	"fmt"
	"strings"
)

// markdown renders summary.md: the summary tables, the runs and their events, for terminals and
// pull requests where the HTML report cannot be shown.
func markdown(p *page) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", mdEsc(p.Scenario))
	fmt.Fprintf(&b, "Started %s, finished %s, %d run(s). Latencies in ms, after the warm-up.\n\n", orDash(p.Started), orDash(p.Finished), len(p.Runs))
	if len(p.Distortion) > 0 {
		fmt.Fprintf(&b, "> **%s**\n", mdEsc(p.DistortionHead))
		for _, d := range p.Distortion {
			if d.Run != "" {
				fmt.Fprintf(&b, ">\n> %s:\n", mdEsc(d.Run))
			}
			b.WriteString(">\n")
			for _, r := range d.Reasons {
				fmt.Fprintf(&b, "> - %s\n", mdEsc(r))
			}
		}
		fmt.Fprintf(&b, ">\n> %s\n\n", mdEsc(p.DistortionAdvice))
	}
	if len(p.Missing) > 0 {
		b.WriteString("Not everything is available:\n\n")
		for _, m := range p.Missing {
			fmt.Fprintf(&b, "- %s\n", mdEsc(m))
		}
		b.WriteString("\n")
	}
	if len(p.Headlines) > 0 {
		b.WriteString("**At a glance**\n\n")
		for _, h := range p.Headlines {
			mark := ""
			if h.Bad {
				mark = "⚠ "
			}
			fmt.Fprintf(&b, "- %s%s (%s)\n", mark, mdEsc(h.Text), mdEsc(h.SectionTitle))
		}
		b.WriteString("\n")
	}
	b.WriteString("## Summary\n\n")
	for i, t := range p.Compare {
		if i == 0 && len(t.Params) > 0 {
			fmt.Fprintf(&b, "Columns: %s.\n\n", mdEsc(strings.Join(t.Params, ", ")))
		}
		b.WriteString("| metric |")
		for _, c := range t.Columns {
			fmt.Fprintf(&b, " %s |", mdEsc(c.Name))
		}
		b.WriteString("\n|---|")
		for range t.Columns {
			b.WriteString("---:|")
		}
		b.WriteString("\n")
		for _, r := range t.Rows {
			fmt.Fprintf(&b, "| %s | %s |\n", mdEsc(r.Metric), strings.Join(r.Cells, " | "))
		}
		b.WriteString("\n")
	}
	if len(p.Tables) > 0 {
		// GitHub and most Markdown viewers fold a <details> block; the blank lines inside let
		// the tables render as Markdown.
		b.WriteString("<details><summary>Every metric of each combination (as in summary.json)</summary>\n\n")
	}
	for _, t := range p.Tables {
		fmt.Fprintf(&b, "### %s", mdEsc(t.Title))
		if t.Params != "(none)" {
			fmt.Fprintf(&b, ": %s", mdEsc(t.Params))
		}
		fmt.Fprintf(&b, " (runs %s", t.Runs)
		if t.N > 1 {
			fmt.Fprintf(&b, "; n = %d, mean ± 95%% CI", t.N)
		}
		b.WriteString(")\n\n")
		if len(t.Latency) > 0 {
			b.WriteString("| metric |")
			for _, h := range p.LatHeaders {
				fmt.Fprintf(&b, " %s |", h)
			}
			b.WriteString("\n|---|")
			for range p.LatHeaders {
				b.WriteString("---:|")
			}
			b.WriteString("\n")
			for _, r := range t.Latency {
				fmt.Fprintf(&b, "| %s | %s |\n", mdEsc(r.Metric), strings.Join(r.Cells, " | "))
			}
			b.WriteString("\n")
		}
		if len(t.Values) > 0 {
			b.WriteString("| metric | value |\n|---|---:|\n")
			for _, r := range t.Values {
				fmt.Fprintf(&b, "| %s | %s |\n", mdEsc(r.Metric), strings.Join(r.Cells, " | "))
			}
			b.WriteString("\n")
		}
	}
	if len(p.Tables) > 0 {
		b.WriteString("</details>\n\n")
	}
	for _, sec := range p.Extra {
		fmt.Fprintf(&b, "## %s\n\n", mdEsc(sec.Title))
		for _, t := range sec.Tables {
			b.WriteString("|")
			for _, c := range t.Columns {
				fmt.Fprintf(&b, " %s |", mdEsc(c.Header))
			}
			b.WriteString("\n|")
			for _, c := range t.Columns {
				if c.Numeric {
					b.WriteString("---:|")
				} else {
					b.WriteString("---|")
				}
			}
			b.WriteString("\n")
			for _, r := range t.Rows {
				b.WriteString("|")
				for _, v := range r {
					fmt.Fprintf(&b, " %s |", mdEsc(v))
				}
				b.WriteString("\n")
			}
			b.WriteString("\n")
		}
		note := sec.MarkdownNote
		if note == "" {
			note = sec.Note
		}
		if note != "" {
			fmt.Fprintf(&b, "%s\n\n", note)
		}
	}
	b.WriteString("## Runs\n\n")
	if len(p.Runs) == 0 {
		b.WriteString("No runs.\n\n")
	}
	for _, r := range p.Runs {
		fmt.Fprintf(&b, "- **%s** repeat %d, %s: %s, duration %s, warm-up %s", r.ID, r.Repeat, mdEsc(r.Params), r.Status, r.Duration, r.Warmup)
		if r.Platform != "" {
			fmt.Fprintf(&b, ", on %s", r.Platform)
			if r.Links != "" {
				fmt.Fprintf(&b, " (links: %s)", mdEsc(r.Links))
			}
		}
		if r.Error != "" {
			fmt.Fprintf(&b, " — %s", mdEsc(r.Error))
		}
		b.WriteString("\n")
	}
	for _, s := range p.Sections {
		fmt.Fprintf(&b, "\n## Events of run %s\n\n", s.ID)
		if len(s.Missing) > 0 {
			fmt.Fprintf(&b, "Missing: %s\n\n", mdEsc(strings.Join(s.Missing, ", ")))
		}
		if len(s.Events) == 0 {
			b.WriteString("No events.\n")
		}
		for _, e := range s.Events {
			fmt.Fprintf(&b, "- %s s: %s", e.Time, mdEsc(e.Label()))
			if e.Detail != "" {
				fmt.Fprintf(&b, " (%s)", mdEsc(e.Detail))
			}
			if e.Status != "" {
				fmt.Fprintf(&b, " — %s", mdEsc(e.Status))
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// mdEsc keeps table cells intact: a "|" would end the cell, a newline the row.
func mdEsc(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "\r", "").Replace(s)
}
