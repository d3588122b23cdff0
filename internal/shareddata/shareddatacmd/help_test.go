package shareddatacmd

import (
	"strconv"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/shareddata/pace"
)

// `pace <role> --help` lists every traffic class of pace's table with its metrics size and
// period, and claims no single default for the flags whose default is the class's.
func TestPaceHelpListsEveryClass(t *testing.T) {
	for _, role := range []string{pace.RoleProducer, pace.RoleConsumer} {
		cmd := newPaceRoleCmd(role)
		var out strings.Builder
		cmd.SetOut(&out)
		cmd.SetArgs([]string{"--help"})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		usage := map[string]string{}
		for _, l := range strings.Split(out.String(), "\n") {
			if f := strings.Fields(l); len(f) > 1 && strings.HasPrefix(f[0], "--") {
				usage[f[0]] = l
			}
		}
		for flag, want := range map[string]func(pace.Class) string{
			"--class": func(c pace.Class) string {
				return c.Name + " " + strconv.Itoa(c.MetricsSize) + " B every " + c.Period.String()
			},
			"--metrics-size": func(c pace.Class) string { return c.Name + " " + strconv.Itoa(c.MetricsSize) },
			"--period":       func(c pace.Class) string { return c.Name + " " + c.Period.String() },
		} {
			for _, c := range pace.Classes {
				if !strings.Contains(usage[flag], want(c)) {
					t.Errorf("%s --help: %s does not say %q:\n%s", role, flag, want(c), usage[flag])
				}
			}
			if flag != "--class" && strings.Contains(usage[flag], "(default ") {
				t.Errorf("%s --help: %s claims a single default: %s", role, flag, usage[flag])
			}
		}
	}
}
