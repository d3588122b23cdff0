package kubeplatform

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/continuum-project/continuum/internal/platform"
)

// appContainer is the name of a container pod's one container.
const appContainer = "app"

// containerPodName is the pod of run number run of an instance with an image: each run (a
// restart is a new one) is a new pod, so that a restart need not wait for the old pod's object
// to go.
func containerPodName(instance string, run int) string {
	return objectName(fmt.Sprintf("ctr-%s-%d", strings.ToLower(instance), run), 63)
}

// containerPod is the pod of an instance with an image (platform.Image), on its scenario node n:
// pinned where the node pod is (the same node selector), labelled as part of the node (so that
// Chaos Mesh's link objects, which select run and node, shape it as the node) but not selected
// by the node's Service (its role is container), with the node's name as its hostname and
// every component's name in its /etc/hosts (Image.Hosts). Its cpus and memory are the
// instance's, else the node's: on the testbed the container lives inside its node's limits.
// A stop signal other than SIGTERM is sent by a preStop hook (a shell in the image: Kubernetes
// sends only SIGTERM, or the image's STOPSIGNAL, which containerd honours).
func (s podSpec) containerPod(spec platform.InstanceSpec, n platform.Node, ref string, pull corev1.PullPolicy, run int) *corev1.Pod {
	img := spec.Image
	labels := runLabels(s.Run)
	labels[LabelNode] = spec.Node
	labels[LabelRole] = RoleContainer
	labels[LabelInstance] = labelValue(spec.Name)
	cpus, mem := spec.CPUs, spec.Memory
	if cpus <= 0 {
		cpus = n.CPUs
	}
	if mem <= 0 {
		mem = int64(n.Memory)
	}
	c := corev1.Container{Name: appContainer, Image: ref, ImagePullPolicy: pull, WorkingDir: img.WorkingDir,
		Resources: podResources(cpus, mem)}
	if img.EntrypointSet {
		c.Command = append([]string{}, img.Entrypoint...)
		c.Args = []string{} // Docker's rule: a new entrypoint drops the image's command
	}
	if len(img.Cmd) > 0 {
		c.Args = append([]string{}, img.Cmd...)
	}
	for _, kv := range img.Env {
		k, v, _ := strings.Cut(kv, "=")
		c.Env = append(c.Env, corev1.EnvVar{Name: k, Value: v})
	}
	for _, p := range img.Ports {
		c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: int32(p), Protocol: corev1.ProtocolTCP})
	}
	if img.User != "" { // numeric: checkInstance
		u, g, hasG := strings.Cut(img.User, ":")
		uid, _ := strconv.ParseInt(u, 10, 64)
		c.SecurityContext = &corev1.SecurityContext{RunAsUser: &uid}
		if hasG {
			gid, _ := strconv.ParseInt(g, 10, 64)
			c.SecurityContext.RunAsGroup = &gid
		}
	}
	if sig := spec.StopSignal; sig != 0 && sig != syscall.SIGTERM {
		c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
			Command: []string{"/bin/sh", "-c", fmt.Sprintf("kill -%d 1", int(sig))}}}}
	}
	var vols []corev1.Volume
	for i, v := range img.Volumes {
		name := fmt.Sprintf("vol-%d", i)
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: v.Destination, ReadOnly: v.ReadOnly})
	}
	no := false
	grace := int64(30)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: containerPodName(spec.Name, run), Namespace: s.Namespace, Labels: labels},
		Spec: corev1.PodSpec{
			NodeSelector: s.NodeSelector,
			// As a node pod: an instance that exits is reported, not restarted behind the
			// runner's back (a restart event makes a new pod).
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			EnableServiceLinks:            &no,
			AutomountServiceAccountToken:  &no,
			Hostname:                      spec.Node,
			HostAliases:                   hostAliases(img.Hosts),
			Containers:                    []corev1.Container{c},
			Volumes:                       vols,
		},
	}
}

// hostAliases turns NAME:ADDRESS entries into /etc/hosts lines, one per address, in order.
func hostAliases(hosts []string) []corev1.HostAlias {
	by := map[string][]string{}
	for _, h := range hosts {
		name, addr, ok := strings.Cut(h, ":")
		if !ok || name == "" || addr == "" {
			continue
		}
		by[addr] = append(by[addr], name)
	}
	out := make([]corev1.HostAlias, 0, len(by))
	for addr, names := range by {
		sort.Strings(names)
		out = append(out, corev1.HostAlias{IP: addr, Hostnames: names})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].IP < out[j].IP })
	return out
}
