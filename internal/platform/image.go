package platform

// Image says that an instance is a container of an OCI image. InstanceSpec.Args still run it
// the way every platform can (on the testbed: `continuum container-run`, runc in the node's
// network namespace); a platform that runs images itself (Kubernetes: a pod of its own) runs
// Image instead and ignores Args. Either way the instance means the same: the image's
// entrypoint and command (or the overrides), its environment plus Env, the declared Ports
// served at the node's address.
type Image struct {
	// Ref is a registry reference ("registry:5000/app:1.0") or an image of the runner's host:
	// an OCI layout directory or tar, or a `docker save` tarball (absolute path).
	Ref string
	// Pick names one image of a local layout that holds several (its name or tag).
	Pick string
	// Entrypoint, if EntrypointSet, replaces the image's (and drops its command); Cmd, if set,
	// replaces its command.
	Entrypoint    []string
	EntrypointSet bool
	Cmd           []string
	// Env is KEY=VALUE added to the image's environment.
	Env        []string
	WorkingDir string // inside the container; "" the image's
	User       string // uid[:gid] or name[:group]; "" the image's
	// Volumes are directories of the runner's host bound into the container.
	Volumes []Volume
	// Hosts are NAME:ADDRESS entries added to the container's /etc/hosts.
	Hosts []string
	// Ports are the TCP ports the container serves, reached at its node's address (the
	// scenario's declared endpoints).
	Ports []int
}

// Volume is a directory of the runner's host bound into a container.
type Volume struct {
	Source      string // absolute path on the runner's host
	Destination string // absolute path in the container
	ReadOnly    bool
}

// Exec runs a command inside another instance's container, as `docker exec` does (a
// healthcheck). InstanceSpec.Args still run it every platform's way (`continuum container-exec`
// on the testbed); a platform that runs images itself runs Args here in that instance.
type Exec struct {
	Instance string   // InstanceSpec.Name of an instance with an Image
	Args     []string // the command as the container sees it
}

// InstanceChecker is what a Provider may implement to refuse, before anything starts, an
// instance it cannot run as specified (a limit it cannot apply, an image it cannot reach). The
// runner asks it for every instance `run --check` builds (the spec's addresses are node names
// then, its paths scratch ones). The error names the instance's key and the platform.
type InstanceChecker interface {
	CheckInstance(spec InstanceSpec) error
}
