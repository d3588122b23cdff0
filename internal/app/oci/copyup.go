package oci

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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
	src, err := resolveIn(rootfs, dest)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	st, err := os.Lstat(src)
	if err != nil || !st.IsDir() {
		return nil
	}
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

// maxLinks bounds the symlinks followed while resolving one path (as the kernel's 40).
const maxLinks = 40

// resolveIn is path inside root with every symlink on the way resolved as if root were / (an
// absolute link starts again at root, ".." stops at root), so the result is always in root.
func resolveIn(root, path string) (string, error) {
	rest := strings.Split(filepath.Clean("/"+path), "/")
	var done []string // resolved components below root
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		p := filepath.Join(append([]string{root}, append(done, c)...)...)
		st, err := os.Lstat(p)
		if err != nil {
			return "", err
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			done = append(done, c)
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", path)
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(target, "/") {
			done = nil
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return filepath.Join(append([]string{root}, done...)...), nil
}
