package agent

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Attacks found in review: each test fails while the defect it names is present.

// TestAttackPullRechmodsExistingDestination: a pull into a directory that exists (the
// documented "existing files overwritten" case) applies the stream's "." entry to it:
// filesPolicy lacks KeepRoot, so the pod chooses the host directory's mode (0777 on the
// user's 0700 directory), and without SpecialBits an honest pull of the pod's /tmp (01777)
// into the host's /tmp strips its sticky bit, letting any host user delete or replace
// another's files there.
func TestAttackPullRechmodsExistingDestination(t *testing.T) {
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
				&tar.Header{Name: "f", Typeflag: tar.TypeReg, Mode: 0o644})
			err := extractTar(bytes.NewReader(tb), dst)
			var st unix.Stat_t
			if serr := unix.Stat(dst, &st); serr != nil {
				t.Fatal(serr)
			}
			if got := int64(st.Mode & 0o7777); got != tc.have {
				t.Fatalf("extract = %v; the existing destination's mode went from %o to %o (the stream's \".\" said %o)", err, tc.have, got, tc.sent)
			}
		})
	}
}
