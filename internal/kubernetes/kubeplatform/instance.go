package kubeplatform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/continuum-project/continuum/internal/kubernetes/kubeplatform/agent"
	"github.com/continuum-project/continuum/internal/platform"
)

// runInstance is an instance of the run: a process in a node pod (instance) or a container pod
// (podInstance).
type runInstance interface {
	platform.Instance
	kill(ctx context.Context) error
	restart(ctx context.Context, grace time.Duration) error
}

// instance is an instance started in a node pod by its agent. Each start is a new run of the
// agent's; Done, Exit and Stop are about the current one.
type instance struct {
	pf   *Platform
	node *nodePod
	spec platform.InstanceSpec
	req  agent.StartRequest

	mu   sync.Mutex
	run  int
	done chan struct{}
	exit platform.Exit
}

// Start starts spec in its node's pod: the instance's directory is pushed there first (kinds
// write configuration into it), a program of the runner's host that is not the continuum binary
// is pushed too, and the instance's output streams and directory come back as it runs and once
// it exits.
func (pf *Platform) Start(ctx context.Context, spec platform.InstanceSpec) (platform.Instance, error) {
	if len(spec.Args) == 0 {
		return nil, fmt.Errorf("instance %s: no command", spec.Name)
	}
	if err := checkInstance(spec, pf.containerd); err != nil {
		return nil, err
	}
	if spec.ExecIn != nil {
		return pf.startExec(ctx, spec)
	}
	np, err := pf.node(spec.Node)
	if err != nil {
		return nil, fmt.Errorf("instance %s: %w", spec.Name, err)
	}
	pf.mu.Lock()
	if pf.down {
		pf.mu.Unlock()
		return nil, errors.New("platform kubernetes: the run is shutting down")
	}
	if _, dup := pf.insts[spec.Name]; dup {
		pf.mu.Unlock()
		return nil, fmt.Errorf("instance %q already exists", spec.Name)
	}
	pf.insts[spec.Name] = nil // reserved while starting
	pf.mu.Unlock()
	var in runInstance
	switch {
	case spec.Image != nil:
		in, err = pf.startPod(ctx, np, spec)
	default:
		in, err = pf.startInstance(ctx, np, spec)
	}
	pf.mu.Lock()
	if err != nil {
		delete(pf.insts, spec.Name)
	} else {
		pf.insts[spec.Name] = in
	}
	down := pf.down
	pf.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if down { // Down ran while this one was starting and could not see it
		_ = in.Stop(time.Second)
		return nil, errors.New("platform kubernetes: the run is shutting down")
	}
	return in, nil
}

func (pf *Platform) startInstance(ctx context.Context, np *nodePod, spec platform.InstanceSpec) (*instance, error) {
	if spec.Service != nil {
		if err := spec.Service.Validate(); err != nil {
			return nil, fmt.Errorf("instance %s: %w", spec.Name, err)
		}
	}
	// The clone's Python paths as the image has them (a node pod of the python or fl image).
	req := agent.StartRequest{Name: spec.Name, Args: pf.paths.all(append([]string{}, spec.Args...)), Env: pf.paths.all(spec.Env), Dir: spec.Dir,
		DataDirs: spec.DataDirs, Binary: pf.cfg.Binary}
	if prog := spec.Args[0]; prog != pf.cfg.Binary && filepath.IsAbs(prog) {
		if fi, err := os.Stat(prog); err == nil && fi.Mode().IsRegular() {
			// A program of the runner's host (a baseline's server, say): it goes to the pod too,
			// and runs there if it needs nothing the image lacks (a static binary does).
			dst := binDir + "/" + filepath.Base(prog)
			if err := np.agent.Push(ctx, prog, dst); err != nil {
				return nil, fmt.Errorf("instance %s: copying %s to node %s: %w", spec.Name, prog, spec.Node, err)
			}
			req.Args[0] = dst
		}
	}
	if spec.Dir != "" {
		if _, err := os.Stat(spec.Dir); err == nil {
			if err := np.agent.Push(ctx, spec.Dir, spec.Dir); err != nil {
				return nil, fmt.Errorf("instance %s: copying %s to node %s: %w", spec.Name, spec.Dir, spec.Node, err)
			}
		}
	}
	in := &instance{pf: pf, node: np, spec: spec, req: req}
	if err := in.start(ctx); err != nil {
		return nil, err
	}
	return in, nil
}

// start starts a new run and follows it.
func (in *instance) start(ctx context.Context) error {
	spec := in.spec
	if err := os.MkdirAll(spec.LogDir, 0o755); err != nil {
		return err
	}
	open := func(stream string) (*os.File, error) {
		return os.OpenFile(platform.LogPath(spec.LogDir, spec.Node, spec.Name, stream), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	}
	stdout, err := open("stdout")
	if err != nil {
		return err
	}
	stderr, err := open("stderr")
	if err != nil {
		stdout.Close()
		return err
	}
	if spec.Service != nil {
		// Each run joins its service (the node pod labelled for the Service's selector);
		// follow withdraws it when the run exits.
		if err := in.pf.declareService(ctx, spec.Node, spec.Service); err != nil {
			stdout.Close()
			stderr.Close()
			return fmt.Errorf("instance %s: %w", spec.Name, err)
		}
	}
	run, err := in.node.agent.Start(ctx, in.req)
	if err != nil {
		stdout.Close()
		stderr.Close()
		if prog := in.req.Args[0]; !filepath.IsAbs(prog) && prog != in.req.Binary {
			// A program looked up in the pod's PATH: the node pods run the project's image.
			return fmt.Errorf("start %s on %s: %w (on platform kubernetes a program runs in its node's pod, the project's image: "+
				"give a program of that image, or the path of a file of this host, which is copied in, or run it as a container)", spec.Name, spec.Node, err)
		}
		return fmt.Errorf("start %s on %s: %w", spec.Name, spec.Node, err)
	}
	done := make(chan struct{})
	in.mu.Lock()
	in.run, in.done, in.exit = run, done, platform.Exit{}
	in.mu.Unlock()
	in.pf.log.Info("instance started", "name", spec.Name, "node", spec.Node, "run", run)
	go in.follow(run, done, stdout, stderr)
	return nil
}

// follow copies a run's output streams into the run's logs (and stdout to spec.Stdout), waits
// for it to exit, brings its directory back, and only then closes done: what the instance wrote
// is on the runner's host by the time Done is closed.
func (in *instance) follow(run int, done chan struct{}, stdout, stderr *os.File) {
	ctx, a, spec := in.pf.ctx, in.node.agent, in.spec
	var out io.Writer = stdout
	if spec.Stdout != nil {
		out = io.MultiWriter(stdout, spec.Stdout)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	for stream, w := range map[string]io.Writer{"stdout": out, "stderr": stderr} {
		go func() {
			defer wg.Done()
			if err := a.Output(ctx, spec.Name, run, stream, w); err != nil && ctx.Err() == nil {
				in.pf.log.Warn("instance output", "name", spec.Name, "stream", stream, "err", err)
			}
		}()
	}
	ex, err := a.Wait(ctx, spec.Name, run)
	exit := platform.Exit{Code: ex.Code, Signal: ex.Signal}
	if err != nil {
		// The agent is gone (its pod was deleted or failed): so is the instance.
		exit = platform.Exit{Code: -1, Signal: "lost"}
		in.pf.log.Warn("instance lost", "name", spec.Name, "node", spec.Node, "err", err)
	}
	wg.Wait()
	stdout.Close()
	stderr.Close()
	if spec.Dir != "" && err == nil {
		pctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		if perr := a.Pull(pctx, spec.Dir, spec.Dir); perr != nil {
			in.pf.log.Warn("instance output directory", "name", spec.Name, "dir", spec.Dir, "err", perr)
		}
		cancel()
	}
	in.pf.log.Info("instance exited", "name", spec.Name, "node", spec.Node, "code", exit.Code, "signal", exit.Signal)
	if spec.Service != nil {
		in.pf.withdrawService(in, spec.Node, spec.Service.Name)
	}
	in.mu.Lock()
	in.exit = exit
	in.mu.Unlock()
	close(done)
}

// Done is closed when the current run has exited and its output is back.
func (in *instance) Done() <-chan struct{} {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.done
}

// Exit says how the current run exited.
func (in *instance) Exit() platform.Exit {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.exit
}

// Stop sends the instance's stop signal (SIGTERM by default) to the run's process group, SIGKILL
// after grace, and returns once it has exited and its output is back.
func (in *instance) Stop(grace time.Duration) error {
	done := in.Done()
	select {
	case <-done:
		return nil
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), grace+30*time.Second)
	defer cancel()
	if sig := in.spec.StopSignal; sig != 0 && sig != syscall.SIGTERM {
		// The agent's stop sends SIGTERM: send the instance's own signal first and give it the
		// grace, then let the agent finish the job (SIGTERM, SIGKILL at once).
		if err := in.node.agent.Signal(ctx, in.spec.Name, sig); err == nil {
			select {
			case <-done:
				return nil
			case <-time.After(grace):
			}
		}
		grace = 0
	}
	if _, err := in.node.agent.Stop(ctx, in.spec.Name, grace); err != nil {
		select {
		case <-done:
			return nil // it exited meanwhile
		default:
		}
		// The agent may be gone with its pod; the follower then reports the instance lost.
		_ = in.node.agent.Signal(ctx, in.spec.Name, syscall.SIGKILL)
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("instance %s on %s did not stop within %v", in.spec.Name, in.spec.Node, grace+30*time.Second)
	}
}

// restart stops the instance gracefully and starts it again as a new run.
func (in *instance) restart(ctx context.Context, grace time.Duration) error {
	if err := in.Stop(grace); err != nil {
		return err
	}
	return in.start(ctx)
}

// kill sends SIGKILL to the run's process group.
func (in *instance) kill(ctx context.Context) error {
	return in.node.agent.Signal(ctx, in.spec.Name, syscall.SIGKILL)
}
