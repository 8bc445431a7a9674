package session

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"time"
	"unsafe"
)

// StateFormat is the version of the binary encoding of a State
// (EncodeState). It changes whenever the layout changes. A State encoded by
// another format or by another FoldVersion is not decoded: the caller folds
// the log again.
//
// Format 1: "LAS1", uvarint format, uvarint fold version, the fields in the
// order encodeState writes them, CRC-32C (Castagnoli) of everything before
// it, little endian. Slices, maps, byte strings and pointers are written as
// uvarint(n+1), 0 standing for nil, so that a decoded State is the encoded
// one, nil and empty alike.
const StateFormat = 1

// stateMagic opens every encoded State.
const stateMagic = "LAS1"

// ErrStateStale reports an encoded State that an older lite-agent wrote (an
// older StateFormat or FoldVersion): it is not used; fold the log again.
var ErrStateStale = errors.New("the saved state was written by an older lite-agent: fold the log again")

// ErrStateDamaged reports an encoded State that does not decode (cut short,
// its checksum wrong, or a value out of range): fold the log again.
var ErrStateDamaged = errors.New("the saved state is damaged: fold the log again")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodeState returns s encoded in StateFormat, appended to dst: all it
// holds, so that DecodeState gives a State that folds on exactly as s does.
func EncodeState(dst []byte, s *State) []byte {
	start := len(dst)
	dst = slices.Grow(dst, sizeHint(s))
	w := stateWriter{b: dst}
	w.b = append(w.b, stateMagic...)
	w.uint(StateFormat)
	w.uint(FoldVersion)
	w.summary(&s.Summary)
	w.usage(s.Usage)
	w.len(len(s.messages), s.messages == nil)
	for i := range s.messages {
		m := &s.messages[i]
		w.str(m.Role)
		w.len(len(m.Blocks), m.Blocks == nil)
		for j := range m.Blocks {
			w.block(&m.Blocks[j])
		}
	}
	w.ints(s.msgSeq)
	w.int(s.cur)
	w.len(len(s.checkpoints), s.checkpoints == nil)
	for _, c := range s.checkpoints {
		w.int(c.Seq)
		w.str(c.Prompt)
		w.time(c.Time)
		w.int(c.PromptSeq)
	}
	w.len(len(s.hazards), s.hazards == nil)
	for i := range s.hazards {
		h := &s.hazards[i]
		w.str(h.Token)
		w.str(h.CallID)
		w.str(h.Tool)
		w.int(h.Seq)
		w.time(h.Started)
		w.strs(h.Paths)
		w.str(h.Job)
		w.int(int64(h.PID))
	}
	w.int(int64(s.jobsStarted))
	w.strs(s.unanswered)
	w.set(s.started)
	w.set(s.snapped)
	w.len(0, s.context == nil)
	if c := s.context; c != nil {
		w.str(c.Text)
		w.len(len(c.Files), c.Files == nil)
		for _, f := range c.Files {
			w.str(f.Path)
			w.str(f.Scope)
			w.int(f.Bytes)
			w.bool(f.Cut)
		}
	}
	w.int(s.contextSeq)
	w.len(0, s.compaction == nil)
	if c := s.compaction; c != nil {
		w.int(c.ThroughSeq)
		w.str(c.Summary)
		w.str(c.Focus)
		w.bool(c.Auto)
		w.int(c.Tokens)
		w.usage(c.Usage)
	}
	w.int(s.compactionSeq)
	w.usage(s.lastUsage)
	w.str(s.model.Model)
	w.str(s.model.From)
	w.str(s.model.Provider)
	return binary.LittleEndian.AppendUint32(w.b, crc32.Checksum(w.b[start:], castagnoli))
}

// sizeHint is about the size of s encoded, so that the encoding grows its
// buffer once: the transcript's bytes and a little per part.
func sizeHint(s *State) int {
	n := 256 + 64*(len(s.checkpoints)+len(s.hazards))
	for i := range s.messages {
		for j := range s.messages[i].Blocks {
			b := &s.messages[i].Blocks[j]
			n += 16 + len(b.Type) + len(b.Text) + len(b.ID) + len(b.Name) + len(b.Input) + len(b.ToolUseID) + len(b.Signature)
			for _, im := range b.Images {
				n += 8 + len(im.MediaType) + len(im.Data)
			}
		}
	}
	for _, c := range s.checkpoints {
		n += len(c.Prompt)
	}
	return n
}

// DecodeState decodes a State EncodeState wrote. A State of a newer format
// or fold version is a *NewerError (ErrNewer), one of an older an
// ErrStateStale error, one that does not decode an ErrStateDamaged error;
// in every case the caller folds the log instead. The State keeps
// references into b, which must not be modified afterwards.
func DecodeState(b []byte) (*State, error) {
	if len(b) < len(stateMagic)+4 || string(b[:len(stateMagic)]) != stateMagic {
		return nil, fmt.Errorf("%w: it does not start as a saved state does", ErrStateDamaged)
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[len(body):]) {
		return nil, fmt.Errorf("%w: its checksum does not match", ErrStateDamaged)
	}
	r := stateReader{b: body, off: len(stateMagic), all: unsafe.String(unsafe.SliceData(body), len(body))}
	if v := r.uint(); r.err == nil && v != StateFormat {
		if v > StateFormat {
			return nil, &NewerError{Format: "saved state format", Version: int(min(v, 1<<31)), Known: StateFormat}
		}
		return nil, fmt.Errorf("%w (state format %d)", ErrStateStale, v)
	}
	if v := r.uint(); r.err == nil && v != FoldVersion {
		if v > FoldVersion {
			return nil, &NewerError{Format: "fold version", Version: int(min(v, 1<<31)), Known: FoldVersion}
		}
		return nil, fmt.Errorf("%w (fold version %d)", ErrStateStale, v)
	}
	s := &State{}
	r.summary(&s.Summary)
	s.Usage = r.usage()
	if n, ok := r.len(); ok {
		// Room for the turn the resume is for: without it, its first
		// message would copy the whole transcript to grow the slice.
		s.messages = make([]Message, n, n+transcriptRoom(n))
		for i := range s.messages {
			m := &s.messages[i]
			m.Role = r.str()
			if n, ok := r.len(); ok {
				m.Blocks = r.blocks(n)
				for j := range m.Blocks {
					r.block(&m.Blocks[j])
				}
			}
		}
	}
	s.msgSeq = r.ints()
	s.cur = r.int()
	if n, ok := r.len(); ok {
		s.checkpoints = make([]Checkpoint, n)
		for i := range s.checkpoints {
			c := &s.checkpoints[i]
			c.Seq, c.Prompt, c.Time, c.PromptSeq = r.int(), r.str(), r.time(), r.int()
		}
	}
	if n, ok := r.len(); ok {
		s.hazards = make([]Hazard, n)
		for i := range s.hazards {
			h := &s.hazards[i]
			h.Token, h.CallID, h.Tool, h.Seq, h.Started = r.str(), r.str(), r.str(), r.int(), r.time()
			h.Paths, h.Job, h.PID = r.strs(), r.str(), int(r.int())
		}
	}
	s.jobsStarted = int(r.int())
	s.unanswered = r.strs()
	s.started = r.set()
	s.snapped = r.set()
	if _, ok := r.len(); ok {
		c := &ProjectContext{Text: r.str()}
		if n, ok := r.len(); ok {
			c.Files = make([]ContextFile, n)
			for i := range c.Files {
				f := &c.Files[i]
				f.Path, f.Scope, f.Bytes, f.Cut = r.str(), r.str(), r.int(), r.bool()
			}
		}
		s.context = c
	}
	s.contextSeq = r.int()
	if _, ok := r.len(); ok {
		c := &Compaction{ThroughSeq: r.int(), Summary: r.str(), Focus: r.str(), Auto: r.bool(), Tokens: r.int()}
		c.Usage = r.usage()
		s.compaction = c
	}
	s.compactionSeq = r.int()
	s.lastUsage = r.usage()
	s.model = ModelChanged{Model: r.str(), From: r.str(), Provider: r.str()}
	if r.err == nil && r.off != len(r.b) {
		r.fail("bytes left over")
	}
	if r.err != nil {
		return nil, r.err
	}
	return s, nil
}

// stateWriter appends the encoding of a State's parts.
type stateWriter struct{ b []byte }

func (w *stateWriter) uint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *stateWriter) int(v int64)   { w.b = binary.AppendVarint(w.b, v) }

func (w *stateWriter) bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

// len writes n, or nil.
func (w *stateWriter) len(n int, isNil bool) {
	if isNil {
		w.uint(0)
		return
	}
	w.uint(uint64(n) + 1)
}

func (w *stateWriter) str(s string) {
	w.uint(uint64(len(s)))
	w.b = append(w.b, s...)
}

func (w *stateWriter) bytes(b []byte) {
	w.len(len(b), b == nil)
	w.b = append(w.b, b...)
}

func (w *stateWriter) strs(v []string) {
	w.len(len(v), v == nil)
	for _, s := range v {
		w.str(s)
	}
}

func (w *stateWriter) ints(v []int64) {
	w.len(len(v), v == nil)
	for _, n := range v {
		w.int(n)
	}
}

// set writes the keys whose value is true, sorted; a false value means
// the same as a missing key to every reader of the State's sets.
func (w *stateWriter) set(m map[string]bool) {
	if m == nil {
		w.len(0, true)
		return
	}
	keys := slices.Sorted(maps.Keys(m))
	keys = slices.DeleteFunc(keys, func(k string) bool { return !m[k] })
	if keys == nil {
		keys = []string{}
	}
	w.strs(keys)
}

func (w *stateWriter) time(t time.Time) {
	if t.IsZero() {
		w.uint(0)
		return
	}
	b, err := t.MarshalBinary()
	if err != nil { // a zone offset that is not whole minutes: keep the instant
		b, _ = t.UTC().MarshalBinary()
	}
	w.uint(uint64(len(b)))
	w.b = append(w.b, b...)
}

func (w *stateWriter) usage(u Usage) {
	w.int(u.InputTokens)
	w.int(u.OutputTokens)
	w.int(u.CacheWriteTokens)
	w.int(u.CacheReadTokens)
}

func (w *stateWriter) block(b *Block) {
	w.str(b.Type)
	w.str(b.Text)
	w.str(b.ID)
	w.str(b.Name)
	w.bytes(b.Input)
	w.str(b.ToolUseID)
	w.bool(b.IsError)
	w.len(len(b.Images), b.Images == nil)
	for _, im := range b.Images {
		w.str(im.MediaType)
		w.bytes(im.Data)
	}
	w.str(b.Signature)
}

func (w *stateWriter) summary(s *Summary) {
	w.str(s.ID)
	w.str(s.Kind)
	w.str(s.Namespace)
	w.str(s.Workdir)
	w.str(s.Model)
	w.len(0, s.Parent == nil)
	if p := s.Parent; p != nil {
		w.str(p.Session)
		w.int(p.Seq)
	}
	w.str(s.Title)
	w.int(s.Head)
	w.int(int64(s.Messages))
	w.str(string(s.Status))
	w.time(s.Created)
	w.time(s.Updated)
	for im := s.Imported; ; im = im.Previous {
		w.len(0, im == nil)
		if im == nil {
			break
		}
		w.str(im.From)
		w.str(im.Host)
		w.time(im.At)
		w.int(im.Head)
		w.bool(im.Salvaged)
	}
	w.strs(s.Open)
	w.int(int64(s.Fold))
}

// stateReader decodes what stateWriter wrote. The first error sticks:
// later reads return zero values. Strings are cut from all, the whole
// encoding seen as a string without a copy (b is not modified after
// DecodeState, which its callers promise): a copy was a quarter of what a
// fresh process resuming a long session allocated.
type stateReader struct {
	b     []byte
	off   int
	all   string
	err   error
	chunk []Block // what is left of the chunk blocks cuts from
}

func (r *stateReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s at byte %d", ErrStateDamaged, what, r.off)
	}
	r.off = len(r.b)
}

func (r *stateReader) uint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.fail("a bad number")
		return 0
	}
	r.off += n
	return v
}

func (r *stateReader) int() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		r.fail("a bad number")
		return 0
	}
	r.off += n
	return v
}

func (r *stateReader) bool() bool {
	switch v := r.uint(); v {
	case 0, 1:
		return v == 1
	}
	r.fail("a bad flag")
	return false
}

// size reads a byte count that must fit in what is left.
func (r *stateReader) size(v uint64) int {
	if v > uint64(len(r.b)-r.off) {
		r.fail("a length past the end")
		return 0
	}
	return int(v)
}

// len reads a count written by stateWriter.len; ok is false for nil. A
// count is bounded by the bytes left, as every element takes at least one.
func (r *stateReader) len() (n int, ok bool) {
	v := r.uint()
	if v == 0 {
		return 0, false
	}
	return r.size(v - 1), r.err == nil
}

func (r *stateReader) str() string {
	n := r.size(r.uint())
	if r.err != nil {
		return ""
	}
	s := r.all[r.off : r.off+n]
	r.off += n
	return s
}

func (r *stateReader) bytes() []byte {
	n, ok := r.len()
	if !ok {
		return nil
	}
	b := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return b
}

// transcriptRoom is the spare capacity a decoded transcript of n messages
// gets: a turn's messages, and an eighth more for a long one.
func transcriptRoom(n int) int { return 8 + n/8 }

func (r *stateReader) strs() []string {
	n, ok := r.len()
	if !ok {
		return nil
	}
	v := make([]string, n)
	for i := range v {
		v[i] = r.str()
	}
	return v
}

// ints reads a list of integers. Its one list is msgSeq, a seq per
// message, which gets the transcript's room to grow.
func (r *stateReader) ints() []int64 {
	n, ok := r.len()
	if !ok {
		return nil
	}
	v := make([]int64, n, n+transcriptRoom(n))
	for i := range v {
		v[i] = r.int()
	}
	return v
}

func (r *stateReader) set() map[string]bool {
	keys := r.strs()
	if keys == nil {
		return nil
	}
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

func (r *stateReader) time() time.Time {
	n := r.size(r.uint())
	if r.err != nil || n == 0 {
		return time.Time{}
	}
	var t time.Time
	if err := t.UnmarshalBinary(r.b[r.off : r.off+n]); err != nil {
		r.fail("a bad time")
		return time.Time{}
	}
	r.off += n
	return t
}

func (r *stateReader) usage() Usage {
	return Usage{InputTokens: r.int(), OutputTokens: r.int(), CacheWriteTokens: r.int(), CacheReadTokens: r.int()}
}

// blocks returns room for a message's n blocks, cut from a chunk shared
// with the messages beside it (one allocation per message was 40% of
// decoding a long transcript); its capacity is n, so an append to it
// copies.
func (r *stateReader) blocks(n int) []Block {
	const chunk = 256
	if n == 0 || n > chunk/4 {
		return make([]Block, n) // an empty list stays one, not nil
	}
	if len(r.chunk) < n {
		r.chunk = make([]Block, chunk)
	}
	b := r.chunk[:n:n]
	r.chunk = r.chunk[n:]
	return b
}

func (r *stateReader) block(b *Block) {
	b.Type, b.Text, b.ID, b.Name = r.str(), r.str(), r.str(), r.str()
	b.Input = r.bytes()
	b.ToolUseID, b.IsError = r.str(), r.bool()
	if n, ok := r.len(); ok {
		b.Images = make([]Image, n)
		for i := range b.Images {
			b.Images[i] = Image{MediaType: r.str(), Data: r.bytes()}
		}
	}
	b.Signature = r.str()
}

func (r *stateReader) summary(s *Summary) {
	s.ID, s.Kind, s.Namespace, s.Workdir, s.Model = r.str(), r.str(), r.str(), r.str(), r.str()
	if _, ok := r.len(); ok {
		s.Parent = &ForkRef{Session: r.str(), Seq: r.int()}
	}
	s.Title, s.Head, s.Messages = r.str(), r.int(), int(r.int())
	s.Status = Status(r.str())
	s.Created, s.Updated = r.time(), r.time()
	for next := &s.Imported; ; {
		if _, ok := r.len(); !ok {
			break
		}
		im := &Import{From: r.str(), Host: r.str(), At: r.time(), Head: r.int(), Salvaged: r.bool()}
		*next, next = im, &im.Previous
	}
	s.Open = r.strs()
	s.Fold = int(r.int())
}
