package oci

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/archive"
)

// copyUp fills an empty volume directory (on the host) with what the image has at dest, as
// Docker does the first time a new named volume is mounted over a path with content, within
// copyUpPolicy: files, directories, symlinks, hard links and FIFOs, with their owners, modes
// (permission and sticky bits), times and extended attributes; no device nodes, setuid or
// setgid bits or file capabilities. The volume's root keeps its own owner and mode unless
// fresh (the caller made it for this container): then it takes the image directory's owner,
// and its mode without write for group and other (Docker's copyOwnership, less what a host
// directory must not give every host user). A volume with anything in it, or a dest the image
// lacks or that is not a directory there, is left as it is. rootfs is the image's mounted
// filesystem; dest is resolved inside it (its symlinks cannot lead out of it).
func copyUp(rootfs, dest, volume string, fresh bool) error {
	entries, err := os.ReadDir(volume)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return nil // not new: Docker copies into an empty volume only
	}
	fd, err := resolveIn(rootfs, dest)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
		return nil // the image has no directory there
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	// The directory the kernel found, by its descriptor ("/." so that it is read as the
	// directory, not as /proc's link to it).
	src := fmt.Sprintf("/proc/self/fd/%d/.", fd)
	// The tree goes through the one extraction routine every archive takes: the volume is on
	// the host, and what the image holds (its links above all) must not reach past it.
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(archive.WriteTree(pw, src))
	}()
	err = archive.Extract(pr, volume, copyUpPolicy)
	pr.CloseWithError(errors.New("extraction ended")) // unblocks the writer after an error
	<-done
	if err != nil {
		return fmt.Errorf("copy the image's %s into the volume %s: %w", dest, volume, err)
	}
	if fresh {
		return ownLikeImage(fd, volume)
	}
	return nil
}

// ownLikeImage gives the volume directory the owner of the image's directory (open as fd) and
// its permission and sticky bits without write for group and other, through a descriptor of
// the volume opened without following a link.
func ownLikeImage(fd int, volume string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat the image's directory: %w", err)
	}
	vfd, err := unix.Open(volume, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open the volume %s: %w", volume, err)
	}
	defer unix.Close(vfd)
	if err := unix.Fchown(vfd, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("give the volume %s the image directory's owner: %w", volume, err)
	}
	if err := unix.Fchmod(vfd, st.Mode&(0o1755)); err != nil {
		return fmt.Errorf("give the volume %s the image directory's mode: %w", volume, err)
	}
	return nil
}

// copyUpPolicy is narrower than Docker's copy-up. Docker copies a named volume's content with
// devices, setuid bits and capabilities, and gives the volume's root the image directory's
// owner and mode (copyOwnership), which is safe there: the volume is
// /var/lib/docker/volumes/NAME/_data, which only root may enter, so what is in it is reached
// only through containers (whose device cgroup decides who opens a device). Docker never
// copies into a bind mount, a host directory the user names. A :copy volume here is such a
// host directory (often in the run's output directory), where an image's 0666 block device
// would be a raw disk and a setuid-root file a root shell for every host user who can reach
// it, and the image's 0777 on the volume would open the user's directory. So the image's tree
// comes without device nodes (left out; FIFOs stay), setuid or setgid bits or
// security.capability, and a volume the user had keeps its own owner and mode (KeepRoot; a
// fresh one is given the image directory's afterwards, without write for group and other).
// (internal/archive/hostile_test.go runs its hostile tars under a copy of this policy.)
var copyUpPolicy = archive.Policy{Symlinks: true, HardLinks: true, SkipDevices: true, Owners: true,
	Xattrs: true, Times: true, KeepRoot: true}

// resolveIn opens the directory path inside root (openIn), as an O_PATH descriptor.
func resolveIn(root, path string) (int, error) {
	return openIn(root, strings.TrimPrefix(filepath.Clean("/"+path), "/")+"/.", unix.O_PATH|unix.O_DIRECTORY)
}

// openIn opens path inside root as the kernel resolves it with root as "/" (openat2
// RESOLVE_IN_ROOT: an absolute link starts again at root, ".." stops there), so what it opens
// is always in root, however the image's links lead; flags are openat's (O_CLOEXEC added).
func openIn(root, path string, flags int) (int, error) {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(rfd)
	for {
		fd, err := unix.Openat2(rfd, strings.TrimPrefix(path, "/"), &unix.OpenHow{
			Flags:   uint64(flags) | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
		})
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		return fd, err
	}
}

// maxImageFile bounds what readImageFile reads: an image's /etc/passwd or /etc/group.
const maxImageFile = 4 << 20

// readImageFile reads the regular file path of the image's filesystem rootfs, resolved inside
// it (openIn), without blocking (O_NONBLOCK: a FIFO there does not hang the run) and at most
// maxImageFile bytes; anything but a regular file is an error.
func readImageFile(rootfs, path string) ([]byte, error) {
	fd, err := openIn(rootfs, path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return nil, fmt.Errorf("the image's %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("the image's %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("the image's %s is not a regular file (mode %o)", path, st.Mode)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxImageFile+1))
	if err != nil {
		return nil, fmt.Errorf("the image's %s: %w", path, err)
	}
	if len(b) > maxImageFile {
		return nil, fmt.Errorf("the image's %s is larger than %d MiB", path, maxImageFile>>20)
	}
	return b, nil
}
