package benchkit

import (
	"io"

	"github.com/spf13/pflag"
)

// OutHelp is --out's help where the bench writes its result as JSON beside the Markdown.
const OutHelp = "write Markdown here, and the raw JSON next to it (default: stdout)"

// FromJSONHelp is --from-json's usual help.
const FromJSONHelp = "measure nothing: render the report again from a result's JSON (the file --out wrote next to the Markdown)"

// Output is the flags every `continuum bench` shares: where the output goes, whether this is a
// smoke run, and a result to render again instead of measuring. A command declares one, registers
// its flags, and writes through it.
type Output struct {
	Out      string // --out: the Markdown's path, the JSON beside it; "": stdout
	Quick    bool   // --quick: what it shortens is each bench's own
	FromJSON string // --from-json: a result to render again
}

// Flags registers --out/-o (OutHelp) and --quick, with quickHelp saying what it shortens.
func (o *Output) Flags(f *pflag.FlagSet, quickHelp string) {
	o.OutFlag(f, "o", OutHelp)
	o.QuickFlag(f, quickHelp)
}

// OutFlag registers --out alone, with shorthand short ("": none) and help: for a bench whose
// --out reads otherwise than OutHelp.
func (o *Output) OutFlag(f *pflag.FlagSet, short, help string) {
	f.StringVarP(&o.Out, "out", short, "", help)
}

// QuickFlag registers --quick alone.
func (o *Output) QuickFlag(f *pflag.FlagSet, help string) {
	f.BoolVar(&o.Quick, "quick", false, help)
}

// FromJSONFlag registers --from-json, for a bench that can render its result again (RenderAgain).
func (o *Output) FromJSONFlag(f *pflag.FlagSet, help string) {
	f.StringVar(&o.FromJSON, "from-json", "", help)
}

// Write delivers md and result where --out says (Write).
func (o *Output) Write(w io.Writer, md string, result any) error {
	return Write(w, o.Out, md, result)
}

// RenderAgain is --from-json's path: when it was given, it reads that result with read, renders it
// with markdown and writes both where --out says, measuring nothing. handled is false when
// --from-json was not given and the command should measure.
func RenderAgain[R any](w io.Writer, o *Output, read func(path string) (R, error), markdown func(R) string) (handled bool, err error) {
	if o.FromJSON == "" {
		return false, nil
	}
	res, err := read(o.FromJSON)
	if err != nil {
		return true, err
	}
	return true, o.Write(w, markdown(res), res)
}

// ReadResult reads a result Write wrote beside its Markdown (ReadJSON), for RenderAgain.
func ReadResult[R any](path string) (*R, error) {
	var r R
	if err := ReadJSON(path, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
