package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/continuum-project/continuum/internal/kubernetes/image"
	"github.com/continuum-project/continuum/internal/testenv"
)

// hostState is what a cluster may change on the host and must give back.
type hostState struct {
	Mounts, Cgroups, Links, Chains, Tables []string
	// Netns are the named network namespaces (/run/netns) and their /etc/netns directories: a
	// multi-node cluster's testbed makes one per node.
	Netns []string
	// Logs are the entries of kubelet's default pod log directory and of its container log
	// links' directory, and the other host paths kubelets and CNI plugins write whatever
	// their configuration says: the device plugins' directory, the CNI results cache.
	Logs    []string
	Sysctls map[string]string
}

// kernelDefaults are the kernel's own values of the kubelet tunables that differ from kubelet's.
var kernelDefaults = map[string]string{"vm/overcommit_memory": "0", "kernel/panic": "0", "kernel/panic_on_oops": "0"}

// fromKernelDefaults sets each tunable that holds kubelet's value (a cluster from before Down
// restored them left it) to the kernel's default, so that the before/after comparison sees it if
// kubelet's value is left again.
func fromKernelDefaults(t *testing.T) {
	t.Helper()
	now, err := readSysctls()
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]string{}
	for k, def := range kernelDefaults {
		if now[k] == kubeletTunables[k] {
			t.Logf("sysctl %s holds kubelet's %s: set to the kernel's default %s first", k, now[k], def)
			set[k] = def
		}
	}
	if err := restoreSysctls(set); err != nil {
		t.Fatal(err)
	}
}

// withoutStaleKubeletSocket removes the device plugin socket a stopped kubelet left (clusters
// before the sweep removed it did), so that the before/after comparison sees it if it is left
// again.
func withoutStaleKubeletSocket(t *testing.T) {
	t.Helper()
	if err := removeStaleKubeletSocket(); err != nil {
		t.Fatal(err)
	}
}

// snapshotHost records the host state a cluster changes. Mounts under the temporary directory
// other than under ours (the test's own) are left out: make test runs this package beside the
// parallel pass, whose container and image tests mount and unmount under their own temporary
// directories meanwhile.
func snapshotHost(t *testing.T, ours string) hostState {
	t.Helper()
	var s hostState
	mounts, err := mountPoints()
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Clean(os.TempDir())
	for _, m := range mounts {
		if !under(m, tmp) || under(m, ours) {
			s.Mounts = append(s.Mounts, m)
		}
	}
	s.Mounts = sortedCopy(s.Mounts)
	// The one-node cluster's cgroup tree, and the testbeds' cgroups (a multi-node cluster's
	// nodes and pods live in its testbed's, in every hierarchy).
	s.Cgroups = cgroupDirsThatExist(hostCgroupRoot)
	for _, root := range cgroupDirs("/") {
		tbs := filepath.Join(root, "continuum")
		if _, err := os.Stat(tbs); err != nil {
			continue
		}
		s.Cgroups = append(s.Cgroups, tbs)
		entries, _ := os.ReadDir(tbs)
		for _, e := range entries {
			if e.IsDir() {
				s.Cgroups = append(s.Cgroups, filepath.Join(tbs, e.Name()))
			}
		}
	}
	s.Cgroups = sortedCopy(s.Cgroups)
	for _, dir := range []string{"/run/netns", "/etc/netns"} {
		entries, _ := os.ReadDir(dir) // absent: none
		for _, e := range entries {
			s.Netns = append(s.Netns, filepath.Join(dir, e.Name()))
		}
	}
	links, err := linkNames()
	if err != nil {
		t.Fatal(err)
	}
	s.Links = links
	if s.Chains, err = iptablesChains(); err != nil {
		t.Fatal(err)
	}
	s.Chains = sortedCopy(s.Chains)
	if s.Tables, err = nftTables(); err != nil {
		t.Fatal(err)
	}
	s.Tables = sortedCopy(s.Tables)
	if s.Sysctls, err = readSysctls(); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"/var/log/pods", containerLogLinks, "/var/lib/kubelet/device-plugins", "/var/lib/cni/results"} {
		entries, _ := os.ReadDir(dir) // absent: nothing there
		for _, e := range entries {
			s.Logs = append(s.Logs, filepath.Join(dir, e.Name()))
		}
	}
	return s
}

func sortedCopy(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return out
}

func cgroupDirsThatExist(path string) []string {
	var out []string
	for _, d := range cgroupDirs(path) {
		if _, err := os.Stat(d); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// requireRoot skips without root, or fails when CONTINUUM_REQUIRE_ROOT=1 (make test).
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CONTINUUM_REQUIRE_ROOT") == "1" {
		t.Fatal("needs root (containerd, kubelet, the pod network)")
	}
	t.Skip("needs root")
}

// buildImages writes the continuum image (and its sandbox) for the test with `continuum image
// build` from $CONTINUUM_BIN (make test: the static bin/continuum), or with the package when it
// is not set. The command runs out of process: under -race, compressing a 60 MB layer in the
// test binary takes minutes.
func buildImages(t *testing.T) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if bin := os.Getenv("CONTINUUM_BIN"); bin != "" {
		cmd := exec.Command(bin, "image", "build", "--out", out, "--images", "continuum", "--tag", "test",
			"--continuum-binary", bin, "--root", root)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, b)
		}
		return filepath.Join(out, "continuum.tar")
	}
	cfg := image.DefaultConfig()
	cfg.Out, cfg.Images, cfg.Root, cfg.Tag = out, []string{"continuum"}, root, "test"
	res, err := image.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res[0].Tarball
}

func repoRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for ; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
	}
}

// TestClusterRunsPodsAndLeavesNothing brings a cluster up on continuum kv, runs a Deployment
// behind a Service and a pod that calls it by its DNS name, kills a daemon, and requires the
// host to be as it was once the cluster is down.
func TestClusterRunsPodsAndLeavesNothing(t *testing.T) {
	binDir, tarball, ours, before := hostForClusterTest(t)

	cfg := DefaultConfig()
	cfg.StateDir = filepath.Join(ours, "cluster")
	cfg.BinDir = binDir
	cfg.ContinuumBin = os.Getenv("CONTINUUM_BIN")
	if cfg.ContinuumBin == "" {
		cfg.ContinuumBin = filepath.Join(filepath.Dir(tarball), "continuum-for-kv")
		root, _ := repoRoot()
		if err := image.GoBuild(context.Background(), root, "./cmd/continuum", cfg.ContinuumBin); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Images = []string{tarball}
	var err error
	if cfg.SandboxImage, err = SandboxFrom(cfg.Images); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	cl, err := Up(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	downed := false
	t.Cleanup(func() {
		if !downed {
			_ = cl.Down(context.Background())
		}
	})

	client := cl.client
	ref := strings.TrimPrefix(strings.Replace(cfg.SandboxImage, "continuum-pause", "continuum", 1), "docker.io/")
	deployEcho(ctx, t, client, ref, gateway(cfg.PodCIDR).String())
	out := runToCompletion(ctx, t, client, ref, []string{"load", "http", "--target", "echo=http://echo.default.svc." + cfg.ClusterDomain + "/",
		"--rate", "20", "--duration", "2s", "--warmup", "0s", "--out", "/tmp/out"})
	if !strings.Contains(out, `"type":"done"`) || !strings.Contains(out, `"errors":0`) || !strings.Contains(out, `"status":"ok"`) {
		t.Fatalf("the load pod's log (through the Service's DNS name and kube-proxy) is not a clean run:\n%s", out)
	}

	// The volumes: a claim of the default class binds once a pod uses it.
	usePVC(ctx, t, client, ref)

	// A daemon that dies is reported; the cluster is then torn down by its owner.
	for _, pr := range cl.procs {
		if pr.name == "coredns" {
			_ = pr.cmd.Process.Kill()
		}
	}
	select {
	case err := <-cl.Failed():
		if !strings.Contains(err.Error(), "coredns") {
			t.Errorf("Failed() = %v, want coredns's exit", err)
		}
	case <-ctx.Done():
		t.Fatal("a killed daemon was not reported")
	}
	downed = true
	downLeavesHostAsBefore(t, cl, ours, before)
	if _, err := os.Stat(cfg.StateDir); !os.IsNotExist(err) {
		t.Fatalf("state dir %s still there (%v)", cfg.StateDir, err)
	}
}

// hostForClusterTest readies the host for a test that brings a cluster up (root, the Kubernetes
// binaries, the continuum image, the kernel's defaults, no stale kubelet socket) and returns the
// bin dir, the image tarball, a temporary directory for the cluster's files (left out of host
// snapshots) and the host's snapshot before the cluster.
func hostForClusterTest(t *testing.T) (binDir, tarball, ours string, before hostState) {
	t.Helper()
	requireRoot(t)
	binDir = kubeBinDir(t)
	tarball = buildImages(t)
	fromKernelDefaults(t)
	withoutStaleKubeletSocket(t)
	ours = t.TempDir()
	return binDir, tarball, ours, snapshotHost(t, ours)
}

// downLeavesHostAsBefore takes the cluster down and fails the test if the host then differs
// from before (snapshotHost, leaving out what is under ours).
func downLeavesHostAsBefore(t *testing.T, cl *Cluster, ours string, before hostState) {
	t.Helper()
	if err := cl.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := diffState(before, snapshotHost(t, ours)); d != "" {
		t.Fatalf("the host differs after down:\n%s", d)
	}
}

func diffState(a, b hostState) string {
	var d strings.Builder
	cmp := func(what string, x, y []string) {
		for _, v := range y {
			if !slices.Contains(x, v) {
				fmt.Fprintf(&d, "%s added: %s\n", what, v)
			}
		}
		for _, v := range x {
			if !slices.Contains(y, v) {
				fmt.Fprintf(&d, "%s removed: %s\n", what, v)
			}
		}
	}
	cmp("mount", a.Mounts, b.Mounts)
	cmp("cgroup", a.Cgroups, b.Cgroups)
	cmp("link", a.Links, b.Links)
	cmp("iptables chain", a.Chains, b.Chains)
	cmp("nftables table", a.Tables, b.Tables)
	cmp("network namespace", a.Netns, b.Netns)
	cmp("log entry", a.Logs, b.Logs)
	for k, v := range a.Sysctls {
		if b.Sysctls[k] != v {
			fmt.Fprintf(&d, "sysctl %s: %s before, %s after\n", k, v, b.Sysctls[k])
		}
	}
	return d.String()
}

func deployEcho(ctx context.Context, t *testing.T, client kubernetes.Interface, ref, dnsAddr string) {
	t.Helper()
	labels := map[string]string{"app": "echo"}
	replicas := int32(2)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "echo"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "echo", Image: ref, ImagePullPolicy: corev1.PullNever,
					Args:           []string{"echo", "--listen", ":8080"},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1},
				}}},
			},
		},
	}
	if _, err := client.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo"},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, "the echo Deployment's 2 pods become Ready", func() bool {
		d, err := client.AppsV1().Deployments("default").Get(ctx, "echo", metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas == replicas
	})
	// Ready pods are in the EndpointSlice at once, in kube-proxy's rules and CoreDNS's answers
	// a moment later: wait for both, from the node, before a client counts errors.
	svc, err := client.CoreV1().Services("default").Get(ctx, "echo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	testenv.Eventually(t, time.Minute, "the Service answers through kube-proxy", func() bool {
		resp, err := hc.Get("http://" + svc.Spec.ClusterIP + "/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", net.JoinHostPort(dnsAddr, "53"))
	}}
	testenv.Eventually(t, time.Minute, "CoreDNS resolves the Service", func() bool {
		addrs, err := r.LookupHost(ctx, "echo.default.svc.cluster.local")
		return err == nil && slices.Contains(addrs, svc.Spec.ClusterIP)
	})
}

// runToCompletion runs a pod of the continuum image with args and returns its log.
func runToCompletion(ctx context.Context, t *testing.T, client kubernetes.Interface, ref string, args []string) string {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "load"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "load", Image: ref, ImagePullPolicy: corev1.PullNever, Args: args,
		}}},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var phase corev1.PodPhase
	testenv.Eventually(t, 2*time.Minute, "the load pod finishes", func() bool {
		p, err := client.CoreV1().Pods("default").Get(ctx, "load", metav1.GetOptions{})
		if err == nil {
			phase = p.Status.Phase
		}
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed
	})
	b, err := client.CoreV1().Pods("default").GetLogs("load", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("logs (through kubelet): %v", err)
	}
	if phase != corev1.PodSucceeded {
		t.Fatalf("load pod %s:\n%s", phase, b)
	}
	return string(b)
}

func usePVC(ctx context.Context, t *testing.T, client kubernetes.Interface, ref string) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: mustQuantity("1Gi")}},
		},
	}
	if _, err := client.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "writer"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "kv", Image: ref, ImagePullPolicy: corev1.PullNever,
				Args:         []string{"kv", "snapshot", "restore", "--help"},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
		},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, "the claim binds to one of the cluster's volumes", func() bool {
		p, err := client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.ClaimBound && strings.HasPrefix(p.Spec.VolumeName, StorageClass)
	})
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

func linkNames() ([]string, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range links {
		out = append(out, l.Attrs().Name)
	}
	slices.Sort(out)
	return out, nil
}
