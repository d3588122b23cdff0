//go:build !linux

package proxybench

// pin pins nothing where CPU affinity is not available (pin_linux.go).
func pin(bool) (*pinning, error) { return &pinning{proxyCPU: -1, undo: func() {}}, nil }
