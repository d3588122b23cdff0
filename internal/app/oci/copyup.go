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
// Docker does the first time a new named volume is mounted over a path with content: files,
// directories, symlinks, hard links, device nodes and FIFOs, with their owners, modes (setuid
// and sticky bits too), times and extended attributes; the volume's root takes the image
// directory's owner and mode. A volume with anything in it, or a dest the image lacks or that
// is not a directory there, is left as it is. rootfs is the image's mounted filesystem; dest
// is resolved inside it (its symlinks cannot lead out of it).
func copyUp(rootfs, dest, volume string) error {
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
	return nil
}

// copyUpPolicy carries everything an image's tree holds, the volume's root taking the image
// directory's owner, mode and times.
var copyUpPolicy = archive.Policy{Symlinks: true, HardLinks: true, Devices: true, Owners: true,
	Xattrs: true, SpecialBits: true, Times: true}

// resolveIn opens path inside root as the kernel resolves it with root as "/"
// (openat2 RESOLVE_IN_ROOT: an absolute link starts again at root, ".." stops there), so what
// it opens is always in root. The result is an O_PATH descriptor of a directory.
func resolveIn(root, path string) (int, error) {
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(rfd)
	for {
		fd, err := unix.Openat2(rfd, strings.TrimPrefix(filepath.Clean("/"+path), "/")+"/.", &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
		})
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		return fd, err
	}
}
