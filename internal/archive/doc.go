// Package archive extracts tar archives under a root directory: every archive Continuum
// unpacks goes through Extract — image layers and OCI layout tars (internal/app/oci), the
// volume copy-up (the image's tree streamed through WriteTree), the files pushed to and
// pulled from node pods (internal/kubernetes/kubeplatform/agent), and kv snapshots restored
// (internal/kv/server).
//
// Invariants, which hold for any archive, however hostile:
//
//   - Nothing outside the root is created, removed, written, linked to, chowned, chmodded,
//     given an extended attribute or timed. An entry's directory is opened by the kernel from
//     the root's file descriptor (openat2 with RESOLVE_BENEATH and RESOLVE_NO_SYMLINKS; made
//     one component at a time, each opened so, when missing), and every change is made
//     relative to that directory's descriptor (mkdirat, openat with O_NOFOLLOW|O_EXCL, symlinkat, linkat, mknodat,
//     fchownat and utimensat with AT_SYMLINK_NOFOLLOW, fchmod on an open descriptor).
//   - A symbolic link is never followed, whoever made it: an entry whose directory is reached
//     through one is refused (as is a hard link whose target is), so a link the archive made
//     cannot redirect a later entry, however the links chain. Directory modes and times, set
//     at the end, are set on what is then a directory at that name, reached the same way.
//   - A hard link links to a file inside the root only; it takes the target's owner, mode and
//     attributes (the header's are not applied: the inode is the target's).
//   - Names: with Policy.ClampNames ".." stops at the root and a leading "/" is dropped (as
//     containerd reads layers); without it such names are refused. A backslash is an ordinary
//     character of a name, as on Linux.
//   - What it writes is bounded by the archive: a sparse entry (GNU's, whose holes archive/tar
//     reads as zeros) is refused, so no file holds more than the archive carried for it, and
//     the files' contents in all are at most Policy.MaxBytes (DefaultMaxBytes, 64 GiB, unless
//     set), the entry that would pass it refused before it is written.
//   - What it holds in memory is bounded too: of a directory entry, whose mode and times are
//     set at the end, only its name, mode and times are kept (not its PAX records), at most
//     256 MiB of them.
//   - Extended attributes never include overlayfs' own (trusted.overlay.*) or security.selinux.
//   - Policy says what else an archive may carry: symbolic and hard links; devices and FIFOs
//     (else refused, or with SkipDevices devices left out and FIFOs made); owners; extended
//     attributes; setuid and setgid bits and file capabilities (security.capability, a setuid
//     bit by other means; else cleared — the sticky bit, which only restricts, is kept); the
//     root's own owner, mode and times (with KeepRoot left as they are); times; OCI whiteouts
//     (turned into overlayfs' 0/0 character devices and trusted.overlay.opaque); and with
//     LinksInside every symbolic link the archive makes (a symlink entry, or a hard link to a
//     symbolic link, which is a second one) must, once the whole archive is written, resolve
//     inside the root as the kernel resolves it (chains included).
//
// What it does not do: it is not a sandbox for what the extracted tree later does (a layer's
// absolute symlinks are meant for the container's root), and a root that other processes
// change while Extract runs is not defended beyond the rules above.
package archive
