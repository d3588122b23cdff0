package cli

import (
	"strings"

	"github.com/spf13/pflag"
)

// Flags is a command's flag declaration: a struct whose Bind declares every flag on fs, bound to
// its fields, with the fields' current values as the defaults. The command binds a struct
// holding its defaults; a kind fills the same struct type and renders it with Args. Bind must
// bind fields of the struct itself (values, nested structs), not of something it points to: Args
// copies the struct.
type Flags[F any] interface {
	*F
	Bind(fs *pflag.FlagSet)
}

// Args renders values as the flags of a command line: every flag whose value differs from its
// value in defaults, in the order Bind declares them. Booleans are written --name=true|false,
// string arrays as one --name per element, other lists comma-separated, everything else
// --name VALUE in the form the flag parses back.
func Args[F any, P Flags[F]](defaults, values F) []string {
	fs := pflag.NewFlagSet("args", pflag.ContinueOnError)
	fs.SortFlags = false
	bound := defaults
	P(&bound).Bind(fs) // records each flag's default (DefValue) and points it at bound's fields
	bound = values     // the same fields now hold the values to render
	var args []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Value.String() == f.DefValue {
			return
		}
		name := "--" + f.Name
		switch v := f.Value.(type) {
		case pflag.SliceValue:
			if f.Value.Type() == "stringArray" {
				for _, s := range v.GetSlice() {
					args = append(args, name, s)
				}
				return
			}
			args = append(args, name, strings.Join(v.GetSlice(), ","))
		default:
			if f.Value.Type() == "bool" {
				args = append(args, name+"="+f.Value.String())
				return
			}
			args = append(args, name, f.Value.String())
		}
	})
	return args
}
