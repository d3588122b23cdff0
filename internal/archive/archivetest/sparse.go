// Package archivetest builds tar archives that archive/tar cannot write, for the tests of
// every package that takes archives from outside (internal/archive, kv's snapshot restore).
package archivetest

import (
	"archive/tar"
	"fmt"
	"strconv"
)

// PAXSparseEntry is the blocks of a PAX (GNU sparse 1.0) entry: a regular file name of
// realsize bytes, all a hole but its last byte (a few KB that archive/tar reads as realsize
// bytes of zeros). No end-of-archive blocks follow.
func PAXSparseEntry(name string, realsize int64) []byte {
	block := func(name string, typ byte, size int64) []byte {
		b := make([]byte, 512)
		copy(b[0:100], name)
		copy(b[100:], "0000644\x00")
		copy(b[108:], "0000000\x00")
		copy(b[116:], "0000000\x00")
		copy(b[124:], fmt.Sprintf("%011o\x00", size))
		copy(b[136:], "00000000000\x00")
		b[156] = typ
		copy(b[257:], "ustar\x0000")
		for i := 148; i < 156; i++ {
			b[i] = ' '
		}
		sum := 0
		for _, c := range b {
			sum += int(c)
		}
		copy(b[148:], fmt.Sprintf("%06o\x00 ", sum))
		return b
	}
	pad := func(b []byte) []byte {
		if r := len(b) % 512; r != 0 {
			b = append(b, make([]byte, 512-r)...)
		}
		return b
	}
	rec := func(k, v string) string {
		n := len(k) + len(v) + 3
		for {
			s := fmt.Sprintf("%d %s=%s\n", n, k, v)
			if len(s) == n {
				return s
			}
			n = len(s)
		}
	}
	pax := rec("GNU.sparse.major", "1") + rec("GNU.sparse.minor", "0") + rec("GNU.sparse.name", name) +
		rec("GNU.sparse.realsize", strconv.FormatInt(realsize, 10))
	sparseMap := pad([]byte(fmt.Sprintf("1\n%d\n1\n", realsize-1)))
	data := append(sparseMap, 'x')
	var out []byte
	out = append(out, block("PaxHeaders/"+name, tar.TypeXHeader, int64(len(pax)))...)
	out = append(out, pad([]byte(pax))...)
	out = append(out, block(name, tar.TypeReg, int64(len(data)))...)
	return append(out, pad(data)...)
}
