package builtin

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"unicode/utf8"
)

// sniffLen is how much of a file decides whether it is text.
const sniffLen = 8 << 10

// binaryReason returns why head (the first bytes of a file, the whole file
// if complete) is not text, or "" if it looks like text: a NUL byte, or
// bytes that are not UTF-8. An incomplete character cut off at the end of a
// partial head does not count.
func binaryReason(head []byte, complete bool) string {
	if bytes.IndexByte(head, 0) >= 0 {
		return "it contains NUL bytes"
	}
	if !complete {
		// Drop a trailing partial rune (at most utf8.UTFMax-1 bytes).
		for i := 1; i < utf8.UTFMax && i <= len(head); i++ {
			if utf8.RuneStart(head[len(head)-i]) {
				if !utf8.FullRune(head[len(head)-i:]) {
					head = head[:len(head)-i]
				}
				break
			}
		}
	}
	if !utf8.Valid(head) {
		return "it is not valid UTF-8 text"
	}
	return ""
}

// sniff reads up to sniffLen bytes of r and returns them with a reader that
// yields the whole stream again, and whether the head is all there is.
func sniff(r io.Reader) (head []byte, whole io.Reader, complete bool, err error) {
	return sniffInto(r, make([]byte, sniffLen))
}

// sniffInto is sniff reading into buf (sniffLen bytes), for callers that
// read many files: the returned head and reader use buf.
func sniffInto(r io.Reader, buf []byte) (head []byte, whole io.Reader, complete bool, err error) {
	n, err := io.ReadFull(r, buf)
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return buf[:n], bytes.NewReader(buf[:n]), true, nil
	case err != nil:
		return nil, nil, false, err
	}
	return buf, io.MultiReader(bytes.NewReader(buf), r), false, nil
}

// lineReader reads lines of any length, keeping at most max bytes of each.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// reset makes lr read r, reusing its buffers.
func (lr *lineReader) reset(r io.Reader) {
	lr.r.Reset(r)
	lr.buf = lr.buf[:0]
}

// next returns the next line without its line ending, cut to max bytes at a
// rune boundary, and the line's full length in bytes. The returned slice is
// valid until the following call. At the end it returns io.EOF.
func (lr *lineReader) next() (line []byte, full int, err error) {
	lr.buf = lr.buf[:0]
	read := 0
	newline := false
	for {
		chunk, err := lr.r.ReadSlice('\n')
		read += len(chunk)
		if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
			newline = true
			chunk = chunk[:len(chunk)-1]
		}
		if room := lr.max + 1 - len(lr.buf); room > 0 {
			lr.buf = append(lr.buf, chunk[:min(room, len(chunk))]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, 0, err
		}
		if read == 0 {
			return nil, 0, io.EOF
		}
		break
	}
	full = read
	if newline {
		full--
	}
	line = lr.buf
	if len(line) == full && full > 0 && line[full-1] == '\r' {
		line = line[:len(line)-1]
		full--
	}
	if len(line) > lr.max {
		line = cutRunes(line, lr.max)
	}
	return line, full, nil
}

// cutRunes returns b cut to at most n bytes without splitting a rune.
func cutRunes(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return b[:n]
}

// countLines counts the lines in the rest of r; a last line without a
// newline counts. It stops with ctxErr's error when that returns one.
func countLines(r io.Reader, ctxErr func() error) (int, error) {
	buf := make([]byte, 256<<10)
	lines := 0
	var last byte = '\n'
	for {
		if err := ctxErr(); err != nil {
			return 0, err
		}
		n, err := r.Read(buf)
		if n > 0 {
			lines += bytes.Count(buf[:n], []byte{'\n'})
			last = buf[n-1]
		}
		if errors.Is(err, io.EOF) {
			if last != '\n' {
				lines++
			}
			return lines, nil
		}
		if err != nil {
			return 0, err
		}
	}
}
