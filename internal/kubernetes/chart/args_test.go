package chart

import (
	"os/exec"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/continuum-project/continuum/internal/testenv"
)

// TestCommandLinesParse runs the continuum binary with every command line the chart renders
// for it (every component on) plus --help: cobra parses every flag first, so a flag the command
// does not have, or a value of the wrong type, fails here and not in a pod.
func TestCommandLinesParse(t *testing.T) {
	bin, cleanup, err := testenv.Binary()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	var containers []corev1.Container
	for _, d := range render(t, "-f", allOn) {
		switch o := d.obj.(type) {
		case *appsv1.Deployment:
			containers = append(containers, o.Spec.Template.Spec.Containers...)
		case *appsv1.StatefulSet:
			containers = append(containers, o.Spec.Template.Spec.Containers...)
		}
	}
	if len(containers) != 6 {
		t.Fatalf("%d continuum containers rendered, want 6 (kv, gateway, realtime-db, bridge, aggregator, orchestrator)", len(containers))
	}
	for _, c := range containers {
		// $(POD_NAME) is expanded by the kubelet; any name will do here.
		args := make([]string, 0, len(c.Args)+1)
		for _, a := range c.Args {
			args = append(args, strings.ReplaceAll(a, "$(POD_NAME)", "m-0"))
		}
		out, err := exec.Command(bin, append(args, "--help")...).CombinedOutput()
		if err != nil {
			t.Errorf("%s: continuum %s --help: %v\n%s", c.Name, strings.Join(args, " "), err, out)
		}
	}
}
