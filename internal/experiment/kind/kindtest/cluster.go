package kindtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/continuum-project/continuum/internal/experiment/kind"
)

// CheckEtcdClusterCommand renders member m2's command for a kind whose members form a cluster
// the way etcd's do (kv and etcd): three members of cluster c1 on n1..n3 plus one member of
// another cluster, and requires etcd's cluster flags naming exactly c1's members. It returns
// the kind and m2's command line for further checks.
func CheckEtcdClusterCommand(t testing.TB, kindName string) (*kind.Kind, string) {
	t.Helper()
	env := kind.Env{Binary: "/bin/continuum", Node: "n2", OutDir: "/o",
		Nodes:      map[string]string{"n1": "10.0.0.1", "n2": "10.0.0.2", "n3": "10.0.0.3"},
		Components: map[string]kind.Component{}}
	var k *kind.Kind
	for i, m := range []string{"m1", "m2", "m3"} {
		var cfg any
		k, cfg = Decode(t, kindName, "cluster: c1\nclient_port: 2379\npeer_port: 2380\n")
		if err := k.Validate(cfg); err != nil {
			t.Fatal(err)
		}
		env.Components[m] = Component(t, fmt.Sprintf("n%d", i+1), kindName, cfg)
	}
	_, other := Decode(t, kindName, "cluster: c2\n")
	env.Components["other"] = Component(t, "n3", kindName, other)
	env.Instance = "m2"
	cmd, err := k.Command(env, env.Components["m2"].Config)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(cmd.Args, " ")
	for _, want := range []string{
		"--initial-cluster m1=http://10.0.0.1:2380,m2=http://10.0.0.2:2380,m3=http://10.0.0.3:2380",
		"--initial-advertise-peer-urls http://10.0.0.2:2380", "--listen-peer-urls http://0.0.0.0:2380",
		"--initial-cluster-token c1",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("%s: command %q lacks %q", kindName, line, want)
		}
	}
	return k, line
}
