package kubeplatform

import (
	"fmt"
	"path/filepath"
	"regexp"

	"github.com/continuum-project/continuum/internal/platform"
)

// CheckInstance refuses, at `run --check` time, an instance this platform cannot run as
// specified (platform.InstanceChecker): Start refuses the same.
func (p Provider) CheckInstance(spec platform.InstanceSpec) error {
	return checkInstance(spec, p.Containerd)
}

var numericUser = regexp.MustCompile(`^[0-9]+(:[0-9]+)?$`)

// checkInstance: a process in a node pod shares the pod's one CPU and memory limit, so it can
// have none of its own; a container becomes a pod of its own, whose user Kubernetes takes as
// numbers only, and whose image must be a registry reference or a file this host can import
// into the cluster's containerd.
func checkInstance(spec platform.InstanceSpec, containerd string) error {
	if img := spec.Image; img != nil {
		if img.User != "" && !numericUser.MatchString(img.User) {
			return fmt.Errorf("platform kubernetes cannot run instance %s as user %q: a pod's user is numeric (uid or uid:gid); give user: as numbers", spec.Name, img.User)
		}
		if local(img.Ref) && containerd == "" {
			return fmt.Errorf("platform kubernetes cannot run instance %s's image %s, a file of this host, without importing it into the cluster: "+
				"give the cluster's containerd socket (--containerd; a `continuum cluster up` cluster has it at <state dir>/containerd/containerd.sock), "+
				"or push the image to a registry the cluster pulls from and give image: its reference", spec.Name, img.Ref)
		}
		return nil
	}
	if spec.CPUs > 0 {
		return fmt.Errorf("platform kubernetes cannot give instance %s its own cpus (%g) inside node %s: a node pod has one CPU limit for all its processes; "+
			"give node %s its cpus in the topology, or run the program as a container (kind container), which gets a pod and limits of its own",
			spec.Name, spec.CPUs, spec.Node, spec.Node)
	}
	if spec.Memory > 0 {
		return fmt.Errorf("platform kubernetes cannot give instance %s its own memory (%d bytes) inside node %s: a node pod has one memory limit for all its processes; "+
			"give node %s its memory in the topology, or run the program as a container (kind container), which gets a pod and limits of its own",
			spec.Name, spec.Memory, spec.Node, spec.Node)
	}
	return nil
}

// local says whether an image reference names a file of this host (the container kind makes
// those absolute) rather than an image in a registry.
func local(ref string) bool { return filepath.IsAbs(ref) }
