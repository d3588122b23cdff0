package image

import (
	"bufio"
	"debug/elf"

	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// hostFiles adds files of this host to a tree at their own paths, with what they need to run:
// symlinks are kept as symlinks and their targets added (so /usr/bin/python3 -> python3.11
// stays a link), directories on the way that are symlinks on the host (/lib -> usr/lib on a
// merged-/usr Debian) become symlinks in the image too, and ELF programs and libraries bring
// their interpreter and every library they need (DT_NEEDED, looked up in their RUNPATH/RPATH,
// then the system's library directories), transitively.
//
// Files under mapped host directories (a venv copied elsewhere in the image) are not added
// again, but their libraries' needs are followed.
type hostFiles struct {
	t       *Tree
	libDirs []string
	mapped  []string        // host directories the tree already holds (copied elsewhere)
	seen    map[string]bool // host paths added or scanned
	missing map[string]bool // "file: library" that no directory holds
}

func newHostFiles(t *Tree) *hostFiles {
	return &hostFiles{t: t, libDirs: systemLibDirs(), seen: map[string]bool{}, missing: map[string]bool{}}
}

// systemLibDirs are the directories the dynamic loader searches: /etc/ld.so.conf.d's, then the
// defaults.
func systemLibDirs() []string {
	var dirs []string
	confs, _ := filepath.Glob("/etc/ld.so.conf.d/*.conf")
	sort.Strings(confs)
	for _, c := range confs {
		f, err := os.Open(c)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); strings.HasPrefix(l, "/") {
				dirs = append(dirs, l)
			}
		}
		f.Close()
	}
	return append(dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

// Add adds the host path p (a file or a symlink to one) and what it needs.
func (h *hostFiles) Add(p string) error {
	p = filepath.Clean(p)
	if h.seen[p] {
		return nil
	}
	h.seen[p] = true
	dir, err := h.resolveDir(filepath.Dir(p))
	if err != nil {
		return err
	}
	real := filepath.Join(dir, filepath.Base(p))
	if real != p {
		h.seen[real] = true
	}
	if h.isMapped(real) {
		return h.scanELF(real)
	}
	fi, err := os.Lstat(real)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(real)
		if err != nil {
			return err
		}
		h.t.Symlink(real, target)
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		return h.Add(target)
	case fi.Mode().IsRegular():
		if err := h.t.File(real, real); err != nil {
			return err
		}
		return h.scanELF(real)
	default:
		return fmt.Errorf("%s: want a file or a symlink, found %s", p, fi.Mode().Type())
	}
}

// resolveDir returns dir with its symlinked components resolved, adding each such component to
// the tree as the symlink it is.
func (h *hostFiles) resolveDir(dir string) (string, error) {
	cur := "/"
	for _, c := range strings.Split(strings.Trim(dir, "/"), "/") {
		if c == "" {
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		h.t.Symlink(next, target)
		if !filepath.IsAbs(target) {
			target = filepath.Join(cur, target)
		}
		if cur, err = h.resolveDir(target); err != nil {
			return "", err
		}
	}
	return cur, nil
}

func (h *hostFiles) isMapped(p string) bool {
	for _, m := range h.mapped {
		if p == m || strings.HasPrefix(p, m+"/") {
			return true
		}
	}
	return false
}

// scanELF adds the interpreter and the libraries the ELF file p needs; other files are left.
func (h *hostFiles) scanELF(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil || string(magic[:]) != elf.ELFMAG {
		return nil
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		return nil // not an ELF we can read: taken as plain data
	}
	defer ef.Close()
	for _, prog := range ef.Progs {
		if prog.Type != elf.PT_INTERP {
			continue
		}
		b, err := io.ReadAll(prog.Open())
		if err != nil {
			return fmt.Errorf("%s: interpreter: %w", p, err)
		}
		if err := h.Add(strings.TrimRight(string(b), "\x00")); err != nil {
			return fmt.Errorf("%s: interpreter: %w", p, err)
		}
	}
	needed, err := ef.ImportedLibraries()
	if err != nil {
		return nil // no dynamic section: static
	}
	var search []string
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		vals, _ := ef.DynString(tag)
		for _, v := range vals {
			for _, d := range strings.Split(v, ":") {
				d = strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", "$ORIGIN"), "$ORIGIN", filepath.Dir(p))
				search = append(search, d)
			}
		}
	}
	search = append(search, h.libDirs...)
	// Last, the file's own directory: wheels bundle libraries side by side (scipy.libs/), found
	// at run time through the RPATH of the extension module that loads them, not their own.
	search = append(search, filepath.Dir(p))
	for _, lib := range needed {
		found := ""
		for _, d := range search {
			c := filepath.Join(d, lib)
			if _, err := os.Stat(c); err == nil {
				found = c
				break
			}
		}
		if found == "" {
			h.missing[p+": "+lib] = true
			continue
		}
		if err := h.Add(found); err != nil {
			return fmt.Errorf("%s needs %s: %w", p, lib, err)
		}
		// The loader expands $ORIGIN from the path the file was opened by, which may be a link
		// elsewhere (Debian's alternatives: libblas.so.3 -> openblas-serial/libblas.so.3, whose
		// $ORIGIN/libopenblas.so.0 the loader then misses); it falls back to the system
		// directories, so the library found there comes too.
		for _, d := range h.libDirs {
			c := filepath.Join(d, lib)
			if _, err := os.Stat(c); err != nil {
				continue
			}
			if c != found {
				if err := h.Add(c); err != nil {
					return fmt.Errorf("%s needs %s: %w", p, lib, err)
				}
			}
			break
		}
	}
	return nil
}

// ScanTree follows the needs of every ELF file under the host directory dir (which the tree
// holds elsewhere: call Map first).
func (h *hostFiles) ScanTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if h.seen[p] {
			return nil
		}
		h.seen[p] = true
		return h.scanELF(p)
	})
}

// Map records that the tree holds the host directory dir (its real path) elsewhere.
func (h *hostFiles) Map(dir string) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	h.mapped = append(h.mapped, real)
	return nil
}

// Missing lists the libraries no directory held ("file: library"), sorted. They are left out;
// a program needing one fails when it loads it (often fine: a GPU driver's library on a host
// without a GPU, which the program only dlopens when it finds a GPU).
func (h *hostFiles) Missing() []string {
	out := make([]string, 0, len(h.missing))
	for m := range h.missing {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}
