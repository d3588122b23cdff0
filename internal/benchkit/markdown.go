package benchkit

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Doc builds a benchmark's Markdown: the header every benchmark shares, then the bench's own
// paragraphs, lists, tables and goals. Every block ends with a blank line.
type Doc struct {
	b strings.Builder
}

// NewDoc starts a document with its title and the header: the command that regenerates it, the
// machine, the commit, the date and duration, the host's load average, and a caution when the
// machine was busy (by the header's samples and the extra ones given, e.g. per system).
func NewDoc(title string, h Header, loadSamples ...float64) *Doc {
	d := &Doc{}
	d.P("# %s\n\n", title)
	if h.Command != "" {
		d.P("Regenerate with:\n\n```\n%s\n```\n\n", h.Command)
	}
	var items []string
	if h.Machine != "" {
		items = append(items, "Machine: "+h.Machine)
	}
	if h.Commit != "" {
		items = append(items, "Commit: "+h.Commit)
	}
	if !h.Started.IsZero() {
		date := h.Started.UTC().Format(time.RFC3339)
		if !h.Finished.IsZero() {
			date += fmt.Sprintf(" (%.0f s)", h.Finished.Sub(h.Started).Seconds())
		}
		items = append(items, "Date: "+date)
	}
	if h.LoadAvg != [2]float64{} {
		items = append(items, fmt.Sprintf("Host load average (1 min): %.2f at the start, %.2f at the end", h.LoadAvg[0], h.LoadAvg[1]))
	}
	d.List(items...)
	if peak, busy := h.Busy(loadSamples...); busy {
		d.Para("**Caution: the machine was busy.** The host's 1-minute load average reached %.2f on %d CPUs during this run (above %.1f). "+
			"It counts this benchmark's own processes too, but above that they were competing for CPU with each other or with other processes: "+
			"that inflates tail latencies most and lowers throughput. Compare with a run on an idle machine before drawing conclusions.",
			peak, h.Cores(), BusyLoad(h.Cores()))
	}
	return d
}

// P writes formatted text as it is.
func (d *Doc) P(format string, args ...any) { fmt.Fprintf(&d.b, format, args...) }

// Para writes a paragraph.
func (d *Doc) Para(format string, args ...any) { d.P(format+"\n\n", args...) }

// Section starts a section ("## title").
func (d *Doc) Section(title string) { d.P("## %s\n\n", title) }

// List writes a bulleted list (nothing when there are no items).
func (d *Doc) List(items ...string) {
	if len(items) == 0 {
		return
	}
	for _, it := range items {
		d.P("- %s\n", it)
	}
	d.P("\n")
}

// Table writes a table.
func (d *Doc) Table(t *Table) { d.P("%s\n", t.String()) }

// Goals writes a section of goal lines.
func (d *Doc) Goals(title string, goals []Goal) {
	d.Section(title)
	lines := make([]string, len(goals))
	for i, g := range goals {
		lines[i] = g.Line()
	}
	d.List(lines...)
}

// RawJSON writes v as JSON in a folded block, so that the Markdown carries its own data (or
// says why it cannot: a result holding a NaN).
func (d *Doc) RawJSON(v any) {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		raw = []byte(fmt.Sprintf("%q", "not encodable: "+err.Error()))
	}
	d.P("<details><summary>raw results (JSON)</summary>\n\n```json\n%s\n```\n</details>\n", raw)
}

// String is the document so far.
func (d *Doc) String() string { return d.b.String() }

// Table is a Markdown table.
type Table struct {
	head  []string
	align string
	rows  [][]string
}

// NewTable starts a table with its columns; align has a letter per column: l (left), r (right,
// for figures) or c (centred).
func NewTable(align string, columns ...string) *Table {
	return &Table{head: columns, align: align}
}

// Row appends a row (missing cells are left empty).
func (t *Table) Row(cells ...string) { t.rows = append(t.rows, cells) }

// Rowf appends a row whose cells are formatted together and separated by " | ".
func (t *Table) Rowf(format string, args ...any) {
	t.rows = append(t.rows, strings.Split(fmt.Sprintf(format, args...), " | "))
}

// Len is the number of rows.
func (t *Table) Len() int { return len(t.rows) }

// String renders the table.
func (t *Table) String() string {
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for i := range t.head {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			if c == "" {
				b.WriteString(" |")
			} else {
				b.WriteString(" " + c + " |")
			}
		}
		b.WriteString("\n")
	}
	line(t.head)
	b.WriteString("|")
	for i := range t.head {
		a := byte('l')
		if i < len(t.align) {
			a = t.align[i]
		}
		switch a {
		case 'r':
			b.WriteString("---:|")
		case 'c':
			b.WriteString(":---:|")
		default:
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.rows {
		line(r)
	}
	return b.String()
}
