package agent

import (
	"archive/tar"
	"bytes"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/continuum-project/continuum/internal/archive/archivetest"
)

func TestPushPullRoundTrip(t *testing.T) {
	_, c := startAgent(t)
	ctx := testCtx(t)
	src := filepath.Join(t.TempDir(), "tree")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(src, "a", "b"), 0o755))
	must(os.WriteFile(filepath.Join(src, "a", "b", "c.txt"), []byte("deep"), 0o640))
	must(os.WriteFile(filepath.Join(src, "run.sh"), []byte("#!/bin/sh\n"), 0o755))
	must(os.Symlink("a/b/c.txt", filepath.Join(src, "link")))
	must(os.Chmod(filepath.Join(src, "a"), 0o750))

	pod := filepath.Join(t.TempDir(), "pod", "tree")
	must(c.Push(ctx, src, pod))
	back := filepath.Join(t.TempDir(), "back")
	must(os.MkdirAll(back, 0o755))
	must(os.WriteFile(filepath.Join(back, "run.sh"), []byte("old, overwritten"), 0o600))
	must(c.Pull(ctx, pod, back))

	for _, root := range []string{pod, back} {
		want := []struct {
			rel  string
			mode fs.FileMode
			data string
		}{
			{"a", fs.ModeDir | 0o750, ""},
			{"a/b", fs.ModeDir | 0o755, ""},
			{"a/b/c.txt", 0o640, "deep"},
			{"run.sh", 0o755, "#!/bin/sh\n"},
		}
		for _, w := range want {
			p := filepath.Join(root, w.rel)
			st, err := os.Lstat(p)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if st.Mode() != w.mode {
				t.Errorf("%s: mode %v; want %v", p, st.Mode(), w.mode)
			}
			if w.data != "" {
				if b, _ := os.ReadFile(p); string(b) != w.data {
					t.Errorf("%s: %q; want %q", p, b, w.data)
				}
			}
		}
		if l, err := os.Readlink(filepath.Join(root, "link")); err != nil || l != "a/b/c.txt" {
			t.Errorf("%s/link = %q, %v", root, l, err)
		}
	}

	// A single file.
	file := filepath.Join(t.TempDir(), "new", "dir", "one.txt")
	must(c.Push(ctx, filepath.Join(src, "run.sh"), file))
	if st, err := os.Stat(file); err != nil || st.Mode() != 0o755 {
		t.Fatalf("pushed file: %v, %v", st, err)
	}
}

// tarOf builds a tar stream of the given headers (regular files get body "x").
func tarOf(t *testing.T, hdrs ...*tar.Header) []byte {
	for _, h := range hdrs {
		if h.Mode == 0 {
			h.Mode = 0o644
		}
	}
	return archivetest.Headers(t, hdrs...)
}

func TestExtractRefusesEscapes(t *testing.T) {
	cases := []struct {
		what string
		hdrs []*tar.Header
		says string
	}{
		{"dot-dot", []*tar.Header{{Name: "../evil", Typeflag: tar.TypeReg}}, `"../evil" refused`},
		{"nested dot-dot", []*tar.Header{{Name: "a/../../evil", Typeflag: tar.TypeReg}}, "climbs out"},
		{"absolute", []*tar.Header{{Name: "/etc/evil", Typeflag: tar.TypeReg}}, "relative paths"},
		{"absolute link", []*tar.Header{{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc"}}, "links must be relative"},
		{"escaping link", []*tar.Header{{Name: "d/l", Typeflag: tar.TypeSymlink, Linkname: "../../x"}}, "points out"},
		{"write through link", []*tar.Header{
			{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "sub"},
			{Name: "sub", Typeflag: tar.TypeDir, Mode: 0o755},
			{Name: "l/f", Typeflag: tar.TypeReg},
		}, "through the symbolic link"},
		{"device", []*tar.Header{{Name: "dev", Typeflag: tar.TypeChar}}, "not carried"},
	}
	for _, tc := range cases {
		t.Run(tc.what, func(t *testing.T) {
			parent := t.TempDir()
			dst := filepath.Join(parent, "dst")
			err := extractTar(bytes.NewReader(tarOf(t, tc.hdrs...)), dst)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("extract = %v; want an error saying %q", err, tc.says)
			}
			if _, err := os.Lstat(filepath.Join(parent, "evil")); err == nil {
				t.Fatal("an entry escaped the destination")
			}
		})
	}
	if err := extractTar(bytes.NewReader(nil), "rel"); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Fatalf("relative dst = %v", err)
	}
}

func TestPushEscapingTarIsRefused(t *testing.T) {
	_, c := startAgent(t)
	ctx := testCtx(t)
	dst := filepath.Join(t.TempDir(), "dst")
	body := tarOf(t, &tar.Header{Name: "../evil", Typeflag: tar.TypeReg})
	resp, err := c.do(ctx, http.MethodPut, "/files?path="+dst, bytes.NewReader(body), "application/x-tar")
	var ae *APIError
	if err == nil {
		resp.Body.Close()
	}
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, "../evil") {
		t.Fatalf("push of an escaping tar = %v; want 400 naming the entry", err)
	}
}

// TestExtractRefusesLinkChains (issue 41, defect 12): links judged one by one read as inside,
// but the kernel resolves their chain out of the destination; the extraction is refused.
func TestExtractRefusesLinkChains(t *testing.T) {
	for what, hdrs := range map[string][]*tar.Header{
		"up then esc": {
			{Name: "a/", Typeflag: tar.TypeDir, Mode: 0o755},
			{Name: "a/up", Typeflag: tar.TypeSymlink, Linkname: ".."},
			{Name: "esc", Typeflag: tar.TypeSymlink, Linkname: "a/up/.."},
		},
		"esc then up": {
			{Name: "a/", Typeflag: tar.TypeDir, Mode: 0o755},
			{Name: "esc", Typeflag: tar.TypeSymlink, Linkname: "a/up/.."},
			{Name: "a/up", Typeflag: tar.TypeSymlink, Linkname: ".."},
		},
		"through a missing name": {
			{Name: "a/", Typeflag: tar.TypeDir, Mode: 0o755},
			{Name: "a/up", Typeflag: tar.TypeSymlink, Linkname: ".."},
			{Name: "esc", Typeflag: tar.TypeSymlink, Linkname: "a/up/missing/../.."},
		},
	} {
		t.Run(what, func(t *testing.T) {
			parent := t.TempDir()
			dst := filepath.Join(parent, "dst")
			err := extractTar(bytes.NewReader(tarOf(t, hdrs...)), dst)
			if err == nil {
				t.Fatal("extract: no error; want the escaping chain refused")
			}
			if !strings.Contains(err.Error(), "esc") {
				t.Errorf("extract = %v; want the error to name the link esc", err)
			}
			if p, lerr := filepath.EvalSymlinks(filepath.Join(dst, "esc")); lerr == nil && !strings.HasPrefix(p, dst) {
				t.Errorf("esc resolves to %s, outside %s", p, dst)
			}
		})
	}
}

// TestPullKeepsTheDestinationsMode: a pull into a directory that exists (the documented
// "existing files overwritten" case) once applied the stream's "." entry to it, so the pod
// chose the host directory's mode (0777 on the user's 0700 directory), and an honest pull of
// the pod's /tmp (01777) into the host's /tmp stripped its sticky bit. The destination keeps
// its own mode; a directory inside keeps its sticky bit but not setuid or setgid.
func TestPullKeepsTheDestinationsMode(t *testing.T) {
	for _, tc := range []struct {
		what       string
		have, sent int64
	}{
		{"a hostile pod opens the user's private directory", 0o700, 0o777},
		{"an honest pull of /tmp into /tmp clears the sticky bit", 0o1777, 0o1777},
	} {
		t.Run(tc.what, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "dst")
			if err := os.Mkdir(dst, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := unix.Chmod(dst, uint32(tc.have)); err != nil {
				t.Fatal(err)
			}
			tb := tarOf(t, &tar.Header{Name: ".", Typeflag: tar.TypeDir, Mode: tc.sent},
				&tar.Header{Name: "f", Typeflag: tar.TypeReg, Mode: 0o644},
				&tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o7777})
			err := extractTar(bytes.NewReader(tb), dst)
			var st unix.Stat_t
			if serr := unix.Stat(dst, &st); serr != nil {
				t.Fatal(serr)
			}
			if got := int64(st.Mode & 0o7777); got != tc.have {
				t.Fatalf("extract = %v; the existing destination's mode went from %o to %o (the stream's \".\" said %o)", err, tc.have, got, tc.sent)
			}
			if serr := unix.Stat(filepath.Join(dst, "tmp"), &st); serr != nil || st.Mode&0o7777 != 0o1777 {
				t.Errorf("tmp: mode %o (%v); want 1777: the sticky bit kept, setuid and setgid cleared", st.Mode&0o7777, serr)
			}
		})
	}
}
