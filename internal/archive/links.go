package archive

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// linkText refuses, before it is made, a link at name whose target is absolute or climbs
// out of the root read as text from the link's directory: the early, clear refusal. The
// kernel's check (checkLinks) is the one that holds.
func linkText(name, target string) error {
	if target == "" || path.IsAbs(target) {
		return fmt.Errorf("symbolic link %q -> %q refused: links must be relative and stay inside the destination", name, target)
	}
	if r := path.Join(path.Dir(name), target); r == ".." || strings.HasPrefix(r, "../") {
		return fmt.Errorf("symbolic link %q -> %q refused: it points out of the destination", name, target)
	}
	return nil
}

// checkLinks holds LinksInside once the whole archive is written: each link made is resolved
// by the kernel beneath the root (RESOLVE_BENEATH: ".." above the root or an absolute link on
// the way is EXDEV), with every link of the chain as it now is. A link that escapes is removed
// and the extraction refused. A dangling link cannot be resolved to the end: it is kept only if
// it is relative and has no "..", so that nothing it names later can lead above the root.
func (x *extractor) checkLinks() error {
	if !x.p.LinksInside {
		return nil
	}
	var bad []string
	var first error
	for _, name := range x.links {
		dir, base := path.Split(name)
		pfd, err := x.dir(strings.TrimSuffix(dir, "/"), false, name)
		if err != nil {
			continue // under a link now: the entry that did that was refused or replaced it
		}
		target, err := readlinkat(pfd, base)
		if err != nil { // replaced by something else
			unix.Close(pfd)
			continue
		}
		why := x.resolves(name, target)
		if why != "" {
			_ = unix.Unlinkat(pfd, base, 0)
			bad = append(bad, name)
			if first == nil {
				first = fmt.Errorf("symbolic link %q -> %q refused: %s", name, target, why)
			}
		}
		unix.Close(pfd)
	}
	if len(bad) > 1 {
		return fmt.Errorf("%w (and %d more links, all removed: %s)", first, len(bad)-1, strings.Join(bad[1:], ", "))
	}
	return first
}

// resolves says why the link name -> target is refused, or "".
func (x *extractor) resolves(name, target string) string {
	for {
		fd, err := unix.Openat2(x.root, name, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
		})
		switch {
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
			continue
		case err == nil:
			unix.Close(fd)
			return ""
		case errors.Is(err, unix.EXDEV):
			return "it points out of the destination (as the kernel resolves it, through the links it goes through)"
		case errors.Is(err, unix.ELOOP):
			return "it loops"
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
			for _, part := range strings.Split(target, "/") {
				if part == ".." {
					return "it dangles and has \"..\": where it leads cannot be checked"
				}
			}
			return ""
		default:
			return err.Error()
		}
	}
}

func readlinkat(dirfd int, name string) (string, error) {
	for n := 256; ; n *= 2 {
		b := make([]byte, n)
		m, err := unix.Readlinkat(dirfd, name, b)
		if err != nil {
			return "", err
		}
		if m < n {
			return string(b[:m]), nil
		}
	}
}
