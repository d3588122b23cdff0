package http1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http/httputil"
	"strconv"
)

// Bodies through the server loop. Each copy reads into the free space of the destination's
// buffer (no buffer of its own) and flushes the destination only before a read that would
// wait for the network: a body that has arrived whole leaves in the same write as its head,
// and one that streams reaches the other side piece by piece as it arrives.

// maxChunkLine bounds a chunk-size line (with extensions) and a trailer line.
const maxChunkLine = 4 << 10

var errChunkFormat = errors.New("malformed chunked encoding")

// CopyN copies n bytes from src to dst. Read failures are wrapped with wrapRead (whose side
// failed matters to the caller); a body that ends early is io.ErrUnexpectedEOF.
func CopyN(dst *bufio.Writer, src *bufio.Reader, n int64, wrapRead func(error) error) error {
	for n > 0 {
		if src.Buffered() == 0 && dst.Buffered() > 0 {
			if err := dst.Flush(); err != nil {
				return err
			}
		}
		if dst.Available() == 0 {
			if err := dst.Flush(); err != nil {
				return err
			}
		}
		p := dst.AvailableBuffer()
		p = p[:cap(p)]
		if int64(len(p)) > n {
			p = p[:n]
		}
		k, err := src.Read(p)
		if k > 0 {
			dst.Write(p[:k]) // copies onto itself: the bytes are already in place
			n -= int64(k)
		}
		if err != nil && n > 0 {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return wrapRead(err)
		}
	}
	return nil
}

// CopyToEOF copies src to dst until src ends (an answer delimited by the close of its
// connection), as chunks when chunked.
func CopyToEOF(dst *bufio.Writer, src *bufio.Reader, chunked bool) error {
	for {
		if src.Buffered() == 0 && dst.Buffered() > 0 {
			if err := dst.Flush(); err != nil {
				return err
			}
		}
		if chunked {
			if dst.Available() < 32 {
				if err := dst.Flush(); err != nil {
					return err
				}
			}
			// Read into the space after a chunk-size line of fixed width.
			const hdr = 10 // 8 hex digits + CRLF
			p := dst.AvailableBuffer()
			p = p[:cap(p)]
			data := p[hdr : len(p)-2]
			k, err := src.Read(data)
			if k > 0 {
				line := strconv.AppendInt(p[:0], int64(k), 16)
				copy(p[hdr-2-len(line):], line)
				for i := 0; i < hdr-2-len(line); i++ {
					p[i] = '0'
				}
				p[hdr-2], p[hdr-1] = '\r', '\n'
				p[hdr+k], p[hdr+k+1] = '\r', '\n'
				dst.Write(p[:hdr+k+2])
			}
			if err == io.EOF {
				_, werr := dst.WriteString("0\r\n\r\n")
				return werr
			}
			if err != nil {
				return UpstreamError(err)
			}
			continue
		}
		if dst.Available() == 0 {
			if err := dst.Flush(); err != nil {
				return err
			}
		}
		p := dst.AvailableBuffer()
		p = p[:cap(p)]
		k, err := src.Read(p)
		if k > 0 {
			dst.Write(p[:k])
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return UpstreamError(err)
		}
	}
}

// CopyChunked copies a chunked body from src to dst: as chunks (normalized size lines,
// extensions dropped) when chunkedOut, else as the bytes of the body. Trailer fields are
// passed on when trailers (and chunkedOut), else dropped.
func CopyChunked(dst *bufio.Writer, src *bufio.Reader, chunkedOut, trailers bool, wrapRead func(error) error) error {
	for {
		if src.Buffered() == 0 && dst.Buffered() > 0 {
			if err := dst.Flush(); err != nil {
				return err
			}
		}
		line, err := readLine(src)
		if err != nil {
			return wrapRead(err)
		}
		for _, c := range line {
			if c < ' ' && c != '\t' || c == 0x7f {
				return wrapRead(errChunkFormat) // a bare CR or LF, or another control
			}
		}
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		line = bytes.TrimRight(line, " \t")
		size, ok := parseHex(line)
		if !ok {
			return wrapRead(errChunkFormat)
		}
		if size == 0 {
			break
		}
		if chunkedOut {
			dst.Write(strconv.AppendInt(dst.AvailableBuffer(), size, 16))
			dst.WriteString("\r\n")
		}
		if err := CopyN(dst, src, size, wrapRead); err != nil {
			return err
		}
		crlf, err := readLine(src)
		if err != nil {
			return wrapRead(err)
		}
		if len(crlf) != 0 {
			return wrapRead(errChunkFormat)
		}
		if chunkedOut {
			dst.WriteString("\r\n")
		}
	}
	if chunkedOut {
		dst.WriteString("0\r\n")
	}
	// Trailer section: fields up to an empty line.
	for {
		line, err := readLine(src)
		if err != nil {
			return wrapRead(err)
		}
		if len(line) == 0 {
			break
		}
		if c := bytes.IndexByte(line, ':'); c <= 0 || !validFieldLine(line) {
			return wrapRead(errChunkFormat)
		}
		if trailers && chunkedOut {
			dst.Write(line)
			dst.WriteString("\r\n")
		}
	}
	if chunkedOut {
		dst.WriteString("\r\n")
	}
	return nil
}

// validFieldLine: a field line with a token name and no control characters.
func validFieldLine(line []byte) bool {
	c := bytes.IndexByte(line, ':')
	for _, ch := range line[:c] {
		if !tchar[ch] {
			return false
		}
	}
	for _, ch := range line[c+1:] {
		if ch < ' ' && ch != '\t' || ch == 0x7f {
			return false
		}
	}
	return true
}

// readLine reads a CRLF-terminated line (without it) of at most maxChunkLine bytes; the
// line is valid until src is read again.
func readLine(src *bufio.Reader) ([]byte, error) {
	line, err := src.ReadSlice('\n')
	if err != nil {
		if err == bufio.ErrBufferFull {
			return nil, errChunkFormat
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if len(line) > maxChunkLine || len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, errChunkFormat
	}
	return line[:len(line)-2], nil
}

// parseHex parses a chunk size: 1 to 15 hex digits.
func parseHex(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | int64(c)
	}
	return n, true
}

// NewChunkWriter writes chunks to w; Close writes the last chunk (no trailers) and the
// trailer section's end.
func NewChunkWriter(w io.Writer) io.WriteCloser { return chunkCloser{httputil.NewChunkedWriter(w), w} }

type chunkCloser struct {
	cw io.WriteCloser
	w  io.Writer
}

func (c chunkCloser) Write(p []byte) (int, error) { return c.cw.Write(p) }
func (c chunkCloser) Close() error {
	if err := c.cw.Close(); err != nil {
		return err
	}
	_, err := io.WriteString(c.w, "\r\n")
	return err
}

// UpstreamBodyError is a failure reading the answer's body from the instance after its head
// was sent to the client: the client's connection is then closed so that the answer does not
// look complete.
type UpstreamBodyError struct{ Err error }

func (e UpstreamBodyError) Error() string { return e.Err.Error() }
func (e UpstreamBodyError) Unwrap() error { return e.Err }

func UpstreamError(err error) error { return UpstreamBodyError{err} }
