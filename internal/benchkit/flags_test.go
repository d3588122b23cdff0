package benchkit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestOutputFlags(t *testing.T) {
	var o Output
	f := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	o.Flags(f, "one short repeat (smoke test)")
	o.FromJSONFlag(f, FromJSONHelp)
	for _, c := range []struct{ name, short, usage string }{
		{"out", "o", OutHelp},
		{"quick", "", "one short repeat (smoke test)"},
		{"from-json", "", FromJSONHelp},
	} {
		fl := f.Lookup(c.name)
		if fl == nil {
			t.Fatalf("--%s not registered", c.name)
		}
		if fl.Shorthand != c.short || fl.Usage != c.usage || fl.DefValue != map[string]string{"quick": "false"}[c.name] {
			t.Errorf("--%s: shorthand %q, usage %q, default %q", c.name, fl.Shorthand, fl.Usage, fl.DefValue)
		}
	}
	if err := f.Parse([]string{"-o", "r/a.md", "--quick", "--from-json", "r/a.json"}); err != nil {
		t.Fatal(err)
	}
	if o != (Output{Out: "r/a.md", Quick: true, FromJSON: "r/a.json"}) {
		t.Errorf("parsed %+v", o)
	}

	var bare Output // a bench whose --out has no -o and that has no --quick
	g := pflag.NewFlagSet("faas", pflag.ContinueOnError)
	bare.OutFlag(g, "", "write Markdown here")
	if fl := g.Lookup("out"); fl == nil || fl.Shorthand != "" || fl.Usage != "write Markdown here" {
		t.Errorf("OutFlag without a shorthand: %+v", fl)
	}
	if g.Lookup("quick") != nil || g.Lookup("from-json") != nil {
		t.Error("OutFlag registered more than --out")
	}
}

type rateResult struct {
	Rate float64 `json:"rate"`
}

func markdown(r *rateResult) string { return fmt.Sprintf("rate %g\n", r.Rate) }

func TestRenderAgain(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.json")
	if err := os.WriteFile(in, []byte(`{"rate": 1500}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder

	handled, err := RenderAgain(&b, &Output{}, ReadResult[rateResult], markdown)
	if handled || err != nil || b.Len() != 0 {
		t.Fatalf("without --from-json: handled %v, err %v, wrote %q", handled, err, b.String())
	}

	handled, err = RenderAgain(&b, &Output{FromJSON: in}, ReadResult[rateResult], markdown)
	if !handled || err != nil || b.String() != "rate 1500\n" {
		t.Fatalf("--from-json to stdout: handled %v, err %v, wrote %q", handled, err, b.String())
	}

	b.Reset()
	out := filepath.Join(dir, "out", "again.md")
	handled, err = RenderAgain(&b, &Output{FromJSON: in, Out: out}, ReadResult[rateResult], markdown)
	if !handled || err != nil {
		t.Fatalf("--from-json --out: handled %v, err %v", handled, err)
	}
	if md, _ := os.ReadFile(out); string(md) != "rate 1500\n" {
		t.Errorf("%s holds %q", out, md)
	}
	if r, err := ReadResult[rateResult](JSONPath(out)); err != nil || r.Rate != 1500 {
		t.Errorf("the JSON beside it: %+v, %v", r, err)
	}

	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"rate": `), 0o644); err != nil {
		t.Fatal(err)
	}
	handled, err = RenderAgain(&b, &Output{FromJSON: bad}, ReadResult[rateResult], markdown)
	if !handled || err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("bad JSON: handled %v, err %v (want an error naming %s)", handled, err, bad)
	}
}
