package kubeplatform

import (
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/continuum-project/continuum/internal/platform"
	"github.com/continuum-project/continuum/internal/spec"
)

func TestContainerPod(t *testing.T) {
	s := podSpec{Run: "run1-001", Namespace: "continuum-run1-001", Image: "continuum-project/continuum:test",
		RunDir: "/results/q/runs/001", NodeSelector: map[string]string{corev1.LabelHostname: "worker-1"}}
	node := platform.Node{Name: "edge", CPUs: 2, Memory: spec.Bytes(1 << 30)}
	spec := platform.InstanceSpec{Name: "web_1", Node: "edge", Memory: 256 << 20, StopSignal: syscall.SIGINT,
		Image: &platform.Image{Ref: "/images/app.tar", Entrypoint: []string{"/bin/app"}, EntrypointSet: true,
			Env: []string{"MODE=edge", "EMPTY="}, WorkingDir: "/srv", User: "1000:2000",
			Volumes: []platform.Volume{{Source: "/results/x/data", Destination: "/data"}, {Source: "/results/x/conf", Destination: "/etc/app", ReadOnly: true}},
			Hosts:   []string{"db:10.0.0.3", "web_1:10.0.0.2", "cache:10.0.0.3"}, Ports: []int{8080, 9090}}}
	pod := s.containerPod(spec, node, "continuum.local/image:abc", corev1.PullNever, 2)

	if errs := validation.IsDNS1123Label(pod.Name); len(errs) > 0 || !strings.HasPrefix(pod.Name, "ctr-web-1-2") {
		t.Errorf("pod name %q: %v", pod.Name, errs)
	}
	if pod.Name == containerPodName("web_1", 1) {
		t.Error("two runs of an instance share a pod name")
	}
	// Part of its node for link emulation (run + node), but not selected by the node's Service.
	if pod.Labels[LabelRun] != "run1-001" || pod.Labels[LabelNode] != "edge" || pod.Labels[LabelRole] != RoleContainer || pod.Labels[LabelInstance] == "" {
		t.Errorf("labels %v", pod.Labels)
	}
	svc := s.nodeService("edge")
	if matches(svc.Spec.Selector, pod.Labels) {
		t.Errorf("the node's Service (selector %v) selects the container pod (%v)", svc.Spec.Selector, pod.Labels)
	}
	if !matches(svc.Spec.Selector, s.nodePod(node).Labels) {
		t.Errorf("the node's Service (selector %v) does not select its node pod", svc.Spec.Selector)
	}
	if pod.Spec.NodeSelector[corev1.LabelHostname] != "worker-1" || pod.Spec.Hostname != "edge" || pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("placement %v, hostname %q, restart %s", pod.Spec.NodeSelector, pod.Spec.Hostname, pod.Spec.RestartPolicy)
	}
	c := pod.Spec.Containers[0]
	if c.Image != "continuum.local/image:abc" || c.ImagePullPolicy != corev1.PullNever {
		t.Errorf("image %s (%s)", c.Image, c.ImagePullPolicy)
	}
	if strings.Join(c.Command, " ") != "/bin/app" || c.Args == nil || len(c.Args) != 0 {
		t.Errorf("command %q args %q: want the entrypoint, and the image's command dropped", c.Command, c.Args)
	}
	if len(c.Env) != 2 || c.Env[0] != (corev1.EnvVar{Name: "MODE", Value: "edge"}) || c.Env[1] != (corev1.EnvVar{Name: "EMPTY"}) {
		t.Errorf("env %v", c.Env)
	}
	if c.WorkingDir != "/srv" || *c.SecurityContext.RunAsUser != 1000 || *c.SecurityContext.RunAsGroup != 2000 {
		t.Errorf("workdir %q, security %+v", c.WorkingDir, c.SecurityContext)
	}
	// The instance's memory, the node's cpus (it has none of its own).
	if got := c.Resources.Limits.Memory().Value(); got != 256<<20 {
		t.Errorf("memory limit %d, want the instance's", got)
	}
	if got := c.Resources.Limits.Cpu().MilliValue(); got != 2000 {
		t.Errorf("cpu limit %dm, want the node's 2000m", got)
	}
	if len(c.Ports) != 2 || c.Ports[0].ContainerPort != 8080 || c.Ports[1].ContainerPort != 9090 {
		t.Errorf("ports %v", c.Ports)
	}
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || strings.Join(c.Lifecycle.PreStop.Exec.Command, " ") != "/bin/sh -c kill -2 1" {
		t.Errorf("lifecycle %+v: want a preStop sending SIGINT to PID 1", c.Lifecycle)
	}
	if len(pod.Spec.Volumes) != 2 || pod.Spec.Volumes[0].EmptyDir == nil || len(c.VolumeMounts) != 2 ||
		c.VolumeMounts[0].MountPath != "/data" || c.VolumeMounts[1].MountPath != "/etc/app" || !c.VolumeMounts[1].ReadOnly {
		t.Errorf("volumes %+v mounts %+v", pod.Spec.Volumes, c.VolumeMounts)
	}
	if len(pod.Spec.HostAliases) != 2 || pod.Spec.HostAliases[0].IP != "10.0.0.2" ||
		strings.Join(pod.Spec.HostAliases[1].Hostnames, ",") != "cache,db" {
		t.Errorf("host aliases %+v", pod.Spec.HostAliases)
	}

	// No entrypoint given: the image's stays, the command replaces the image's; SIGTERM needs no
	// hook; no limits when neither the instance nor the node has any.
	spec.Image = &platform.Image{Ref: "registry.example:5000/app:1", Cmd: []string{"serve", "--port", "8080"}}
	spec.StopSignal, spec.Memory = syscall.SIGTERM, 0
	pod = s.containerPod(spec, platform.Node{Name: "edge"}, spec.Image.Ref, corev1.PullIfNotPresent, 1)
	c = pod.Spec.Containers[0]
	if c.Command != nil || strings.Join(c.Args, " ") != "serve --port 8080" || c.Lifecycle != nil || len(c.Resources.Limits) != 0 {
		t.Errorf("command %q args %q lifecycle %+v limits %v", c.Command, c.Args, c.Lifecycle, c.Resources.Limits)
	}
}

func matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func TestCheckInstance(t *testing.T) {
	img := func(ref, user string) *platform.Image { return &platform.Image{Ref: ref, User: user} }
	for _, tc := range []struct {
		name       string
		spec       platform.InstanceSpec
		containerd string
		want       string // "" ok, else in the error
	}{
		{"process", platform.InstanceSpec{Name: "p", Node: "edge"}, "", ""},
		{"process cpus", platform.InstanceSpec{Name: "p", Node: "edge", CPUs: 0.5}, "", "cannot give instance p its own cpus (0.5) inside node edge"},
		{"process memory", platform.InstanceSpec{Name: "p", Node: "edge", Memory: 64 << 20}, "", "cannot give instance p its own memory"},
		{"container limits", platform.InstanceSpec{Name: "c", Node: "edge", CPUs: 1, Memory: 64 << 20, Image: img("registry:5000/a:1", "")}, "", ""},
		{"registry image", platform.InstanceSpec{Name: "c", Node: "edge", Image: img("registry:5000/a:1", "1000")}, "", ""},
		{"local image, no containerd", platform.InstanceSpec{Name: "c", Node: "edge", Image: img("/images/a.tar", "")}, "", "--containerd"},
		{"local image", platform.InstanceSpec{Name: "c", Node: "edge", Image: img("/images/a.tar", "")}, "/run/containerd.sock", ""},
		{"user by name", platform.InstanceSpec{Name: "c", Node: "edge", Image: img("a:1", "nobody")}, "", `user "nobody": a pod's user is numeric`},
	} {
		err := Provider{Containerd: tc.containerd}.CheckInstance(tc.spec)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		case tc.want != "" && !strings.Contains(err.Error(), "platform kubernetes"):
			t.Errorf("%s: %v does not name the platform", tc.name, err)
		}
	}
}

func TestPickImported(t *testing.T) {
	const d1, d2 = "sha256:1111111111111111111111111111111111111111111111111111111111111111",
		"sha256:2222222222222222222222222222222222222222222222222222222222222222"
	one := "unpacking docker.io/library/app:1.0 (" + d1 + ")...done\n"
	two := "unpacking docker.io/continuum-project/continuum:test (" + d1 + ")...done\n" +
		"unpacking docker.io/continuum-project/continuum-pause:test (" + d2 + ")...done\n"
	for _, tc := range []struct{ out, pick, name, err string }{
		{out: one, name: "docker.io/library/app:1.0"},
		{out: one, pick: "app", name: "docker.io/library/app:1.0"},
		{out: one, pick: "1.0", name: "docker.io/library/app:1.0"},
		{out: two, pick: "continuum", name: "docker.io/continuum-project/continuum:test"},
		{out: two, pick: "continuum-pause:test", name: "docker.io/continuum-project/continuum-pause:test"},
		{out: two, err: "several images"},
		{out: two, pick: "nope", err: `no image named "nope"`},
		{out: "", err: "named no image"},
	} {
		name, _, err := pickImported(tc.out, tc.pick)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("pick %q: %v, want an error with %q", tc.pick, err, tc.err)
			}
			continue
		}
		if err != nil || name != tc.name {
			t.Errorf("pick %q = %q, %v; want %q", tc.pick, name, err, tc.name)
		}
	}
}

func TestRedirect(t *testing.T) {
	pf := &Platform{redirects: map[string]map[int]string{"edge": {8080: "10.1.0.9:8080"}}}
	for _, tc := range []struct{ node, network, addr, want string }{
		{"edge", "tcp", "127.0.0.1:8080", "10.1.0.9:8080"},
		{"edge", "tcp", "localhost:8080", "10.1.0.9:8080"},
		{"edge", "tcp", "127.0.0.1:8081", "127.0.0.1:8081"}, // a process of the node pod
		{"edge", "tcp", "10.0.0.5:8080", "10.0.0.5:8080"},   // another address: as asked
		{"cloud", "tcp", "127.0.0.1:8080", "127.0.0.1:8080"},
		{"edge", "unix", "/run/x.sock", "/run/x.sock"},
	} {
		if got := pf.redirect(tc.node, tc.network, tc.addr); got != tc.want {
			t.Errorf("redirect(%s, %s, %s) = %s, want %s", tc.node, tc.network, tc.addr, got, tc.want)
		}
	}
}
