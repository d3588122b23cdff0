package gateway

import (
	"testing"
)

// FuzzParseFunction: any --function text is a function that validates, or an error; a parsed
// function formats to text that parses to the same function.
func FuzzParseFunction(f *testing.F) {
	dir := f.TempDir()
	for _, s := range []string{
		"name=f,handler=" + dir + ",mode=http,scaler=rps,max=20",
		"name=f,handler=" + dir + ",mode=classic,min=0,idle_timeout=30s,zygote=true",
		"name=f,handler=" + dir + ",scaler=concurrency,target_concurrency=2,stable_window=1m",
		"name=,handler=",
		"=,=,",
		"name=f,handler=" + dir + ",max=-1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fn, err := ParseFunction(s)
		if err != nil {
			return
		}
		again, err := ParseFunction(fn.Format())
		if err != nil {
			t.Fatalf("%q parsed, but its format %q does not: %v", s, fn.Format(), err)
		}
		if *again != *fn {
			t.Fatalf("%q: %+v formats and parses back as %+v", s, *fn, *again)
		}
	})
}
