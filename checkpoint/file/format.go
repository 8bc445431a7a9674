package file

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// Log file layout (see doc.go for the full description).
const (
	// logMagic opens every session log: 14 bytes of name and a 2-byte
	// big-endian format version.
	logMagic  = "LITEAGENT-LOG\n\x00\x01"
	logFormat = 1
	// logHeaderLen is the size of the file header that precedes the frames.
	logHeaderLen = int64(len(logMagic))

	// frameMagic opens every frame.
	frameMagic = "LAfr"
	// frameHeaderLen is the fixed size of a frame header.
	frameHeaderLen = 32
	// maxFramePayload caps one frame's stored and decoded payload. One
	// Append request is one frame or part of one, so it is also the cap on
	// the total size of one request.
	maxFramePayload = 1 << 30
)

// Payload encodings, one byte in each frame header.
const (
	encRaw  = 0 // events as written; each event's data is its JSON payload
	encZstd = 1 // the raw payload compressed as one zstd frame
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is checkpoint.ErrCorrupt: a log or file of the store is damaged
// in a way the store does not repair by itself (a torn tail is repaired;
// damage followed by valid records, or a log shorter than the head its
// index recorded, is not). Damage to one session's log is a
// *checkpoint.CorruptError whose reason names the file and the offset.
// Nothing is changed on disk when it is returned.
var ErrCorrupt = checkpoint.ErrCorrupt

// frameHeader is the decoded fixed header of one frame.
type frameHeader struct {
	crc      uint32
	plen     uint32 // stored payload bytes after the header
	enc      uint8
	firstSeq int64
	count    uint32
	rlen     uint32 // decoded payload bytes
}

// size is the whole frame's size on disk.
func (h frameHeader) size() int64 { return frameHeaderLen + int64(h.plen) }

// lastSeq is the seq of the frame's last event.
func (h frameHeader) lastSeq() int64 { return h.firstSeq + int64(h.count) - 1 }

// parseFrameHeader decodes b (frameHeaderLen bytes) without checking the CRC.
// It fails when the bytes cannot be the start of a frame.
func parseFrameHeader(b []byte) (frameHeader, error) {
	if string(b[0:4]) != frameMagic {
		return frameHeader{}, errors.New("no frame marker")
	}
	h := frameHeader{
		crc:      binary.LittleEndian.Uint32(b[4:8]),
		plen:     binary.LittleEndian.Uint32(b[8:12]),
		enc:      b[12],
		firstSeq: int64(binary.LittleEndian.Uint64(b[16:24])),
		count:    binary.LittleEndian.Uint32(b[24:28]),
		rlen:     binary.LittleEndian.Uint32(b[28:32]),
	}
	switch {
	case b[13] != 0 || b[14] != 0 || b[15] != 0:
		return h, errors.New("reserved header bytes are not zero")
	case h.enc != encRaw && h.enc != encZstd:
		return h, fmt.Errorf("unknown payload encoding %d", h.enc)
	case h.plen > maxFramePayload || h.rlen > maxFramePayload:
		return h, fmt.Errorf("payload length %d/%d over the limit", h.plen, h.rlen)
	case h.enc == encRaw && h.plen != h.rlen:
		return h, errors.New("raw payload lengths differ")
	case h.firstSeq < 1 || h.count == 0 || h.count > h.rlen/4:
		return h, fmt.Errorf("bad seq range %d+%d", h.firstSeq, h.count)
	}
	return h, nil
}

// frameCRC computes the checksum of a frame: the header after the CRC field
// and the stored payload.
func frameCRC(header, payload []byte) uint32 {
	c := crc32.Update(0, castagnoli, header[8:frameHeaderLen])
	return crc32.Update(c, castagnoli, payload)
}

// appendEvent appends one event's encoding to buf: uvarint type length,
// type, varint unix seconds, uvarint nanoseconds, uvarint data length, data.
func appendEvent(buf []byte, e session.Event) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(e.Type)))
	buf = append(buf, e.Type...)
	buf = binary.AppendVarint(buf, e.Time.Unix())
	buf = binary.AppendUvarint(buf, uint64(e.Time.Nanosecond()))
	buf = binary.AppendUvarint(buf, uint64(len(e.Data)))
	return append(buf, e.Data...)
}

// encodedEventSize bounds the size appendEvent adds for e.
func encodedEventSize(e session.Event) int {
	return len(e.Type) + len(e.Data) + 4*binary.MaxVarintLen64
}

// decodeEvents decodes count events of a raw payload, the first with seq
// first. Data slices alias raw (capacity-limited), so raw must not be reused.
func decodeEvents(raw []byte, first int64, count uint32, fromSeq int64, out []session.Event) ([]session.Event, error) {
	p := raw
	for i := range int64(count) {
		tl, n := binary.Uvarint(p)
		if n <= 0 || tl > uint64(len(p)-n) {
			return out, errors.New("bad event type length")
		}
		p = p[n:]
		typ := p[:tl]
		p = p[tl:]
		sec, n := binary.Varint(p)
		if n <= 0 {
			return out, errors.New("bad event time")
		}
		p = p[n:]
		nsec, n := binary.Uvarint(p)
		if n <= 0 || nsec >= 1e9 {
			return out, errors.New("bad event time")
		}
		p = p[n:]
		dl, n := binary.Uvarint(p)
		if n <= 0 || dl > uint64(len(p)-n) {
			return out, errors.New("bad event data length")
		}
		p = p[n:]
		data := p[:dl:dl]
		p = p[dl:]
		seq := first + i
		if seq < fromSeq {
			continue
		}
		if dl == 0 {
			data = nil
		}
		out = append(out, session.Event{
			Seq:  seq,
			Type: internType(typ),
			Time: time.Unix(sec, int64(nsec)).UTC(),
			Data: data,
		})
	}
	if len(p) != 0 {
		return out, errors.New("trailing bytes after the last event")
	}
	return out, nil
}

// internType returns the known types without allocating.
func internType(b []byte) session.Type {
	switch string(b) {
	case string(session.TypeSessionStarted):
		return session.TypeSessionStarted
	case string(session.TypeUserPrompt):
		return session.TypeUserPrompt
	case string(session.TypeAssistantMessage):
		return session.TypeAssistantMessage
	case string(session.TypeToolStarted):
		return session.TypeToolStarted
	case string(session.TypeFileSnapshot):
		return session.TypeFileSnapshot
	case string(session.TypeToolFinished):
		return session.TypeToolFinished
	case string(session.TypeTurnCompleted):
		return session.TypeTurnCompleted
	case string(session.TypeTurnInterrupted):
		return session.TypeTurnInterrupted
	case string(session.TypeRecoveryAcknowledged):
		return session.TypeRecoveryAcknowledged
	case string(session.TypeRestored):
		return session.TypeRestored
	}
	return session.Type(b)
}

// frameReader walks the frames of one log from a start offset to an end
// offset (a snapshot of the file size), reading sequentially through a
// buffer. Stored payloads are returned in fresh slices the caller owns.
type frameReader struct {
	r     io.ReaderAt
	path  string
	off   int64 // offset of the next frame
	end   int64
	buf   []byte // read-ahead buffer
	bufO  int64  // file offset of buf[0]
	reuse bool   // reuse buf; else returned payloads stay valid for good
}

// Read-ahead sizes: a reused buffer is kept small; fresh buffers (whose
// payloads are handed out to callers) are large, so that a typical log is
// read with one system call.
const (
	readAhead      = 1 << 20
	readAheadFresh = 16 << 20
)

func newFrameReader(r io.ReaderAt, path string, start, end int64) *frameReader {
	return &frameReader{r: r, path: path, off: start, end: end}
}

// fill makes sure bytes [off, off+n) are in buf, reading ahead; it returns
// false when the snapshot ends before off+n.
func (fr *frameReader) fill(off int64, n int) (bool, error) {
	if off+int64(n) > fr.end {
		return false, nil
	}
	if off >= fr.bufO && off+int64(n) <= fr.bufO+int64(len(fr.buf)) {
		return true, nil
	}
	size := max(n, readAhead)
	if !fr.reuse {
		size = max(n, readAheadFresh)
	}
	size = int(min(int64(size), fr.end-off))
	if !fr.reuse || cap(fr.buf) < size {
		fr.buf = make([]byte, size)
	}
	fr.buf = fr.buf[:size]
	if _, err := fr.r.ReadAt(fr.buf, off); err != nil {
		fr.buf = fr.buf[:0]
		return false, fmt.Errorf("read %s at offset %d: %w", fr.path, off, err)
	}
	fr.bufO = off
	return true, nil
}

// badFrame describes why the bytes at an offset are not a valid frame.
type badFrame struct {
	off    int64
	reason string
}

// next returns the next frame's header, its whole bytes and its stored
// payload (views into the read-ahead buffer, valid until the next call when
// the buffer is reused). At the end of the snapshot it returns ok false and
// bad nil; at bytes that are not a valid frame it returns ok false and a
// description.
func (fr *frameReader) next() (h frameHeader, frame, payload []byte, ok bool, bad *badFrame, err error) {
	if fr.off >= fr.end {
		return h, nil, nil, false, nil, nil
	}
	got, err := fr.fill(fr.off, frameHeaderLen)
	if err != nil {
		return h, nil, nil, false, nil, err
	}
	if !got {
		return h, nil, nil, false, &badFrame{fr.off, "a partial frame header"}, nil
	}
	h, perr := parseFrameHeader(fr.buf[fr.off-fr.bufO:][:frameHeaderLen])
	if perr != nil {
		return h, nil, nil, false, &badFrame{fr.off, perr.Error()}, nil
	}
	got, err = fr.fill(fr.off, int(h.size()))
	if err != nil {
		return h, nil, nil, false, nil, err
	}
	if !got {
		return h, nil, nil, false, &badFrame{fr.off, fmt.Sprintf("a frame of %d bytes that runs past the end of the file", h.size())}, nil
	}
	start := fr.off - fr.bufO
	frame = fr.buf[start : start+h.size() : start+h.size()]
	payload = frame[frameHeaderLen:]
	if frameCRC(frame, payload) != h.crc {
		return h, nil, nil, false, &badFrame{fr.off, "a checksum mismatch"}, nil
	}
	fr.off += h.size()
	return h, frame, payload, true, nil, nil
}

// validFrameAfter reports the offset of the first valid frame that starts
// after off and before end, or -1. It is how a damaged frame followed by good
// ones (corruption in the middle) is told apart from a torn tail.
func validFrameAfter(r io.ReaderAt, off, end int64) (int64, error) {
	const chunk = 1 << 20
	buf := make([]byte, chunk+len(frameMagic)-1)
	for pos := off + 1; pos < end; pos += chunk {
		n := int(min(int64(len(buf)), end-pos))
		if _, err := r.ReadAt(buf[:n], pos); err != nil && !errors.Is(err, io.EOF) {
			return -1, err
		}
		b := buf[:n]
		for i := 0; ; {
			j := bytes.Index(b[i:], []byte(frameMagic))
			if j < 0 || int64(i+j) >= chunk {
				break
			}
			cand := pos + int64(i+j)
			if frameValidAt(r, cand, end) {
				return cand, nil
			}
			i += j + 1
		}
	}
	return -1, nil
}

// frameValidAt reports whether a complete frame with a good checksum starts at off.
func frameValidAt(r io.ReaderAt, off, end int64) bool {
	if off+frameHeaderLen > end {
		return false
	}
	hb := make([]byte, frameHeaderLen)
	if _, err := r.ReadAt(hb, off); err != nil {
		return false
	}
	h, err := parseFrameHeader(hb)
	if err != nil || off+h.size() > end {
		return false
	}
	p := make([]byte, h.plen)
	if _, err := r.ReadAt(p, off+frameHeaderLen); err != nil {
		return false
	}
	return frameCRC(hb, p) == h.crc
}

// checkLogHeader checks the file header of a log of the given size. It
// returns torn=true when the file is too short to hold a header and what it
// holds is a prefix of one (a creation that did not finish): such a log holds
// no events.
func checkLogHeader(r io.ReaderAt, path string, size int64) (torn bool, err error) {
	n := min(size, logHeaderLen)
	b := make([]byte, n)
	if _, err := r.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	if n < logHeaderLen {
		if bytes.HasPrefix([]byte(logMagic), b) || allZero(b) {
			return true, nil
		}
	} else if string(b) == logMagic {
		return false, nil
	} else if allZero(b) && size == logHeaderLen {
		return true, nil
	}
	if name := len(logMagic) - 2; n == logHeaderLen && string(b[:name]) == logMagic[:name] {
		if v := int(binary.BigEndian.Uint16(b[name:])); v > logFormat {
			return false, fmt.Errorf("%s was %w", path, &session.NewerError{Format: "log format", Version: v, Known: logFormat})
		}
	}
	return false, fmt.Errorf("%w: %s is not a lite-agent session log (bad file header); move it out of the store directory", ErrCorrupt, path)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
