package provider

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"
	"unsafe"

	"github.com/lite-agent/lite-agent/session"
)

// EncodedCap bounds the JSON an Encoded keeps; past it, the transcripts
// least recently sent are let go (the latest one is always kept).
const EncodedCap = 64 << 20

// Encoded keeps the JSON a provider encoded each transcript message to,
// so that a request encodes only the messages new since the last request
// of its transcript: every model call sends the whole transcript (a
// 500-turn transcript in provider/anthropic: about 2 ms to encode fresh,
// well under 1 ms from kept JSON; BenchmarkEncodeLongTranscript, figures
// in README). A kept message is sent as the same bytes, which is also what
// a prompt cache needs.
//
// What it keeps is lines: the messages one request sent, in order, each
// with its JSON. A request continues the line that shares the longest
// prefix with its messages, and finds a message kept only at the same
// place in that line, compared field by field (a transcript's messages
// share their strings from one request to the next, so that is mostly
// pointer checks): no message is hashed. A transcript that changed before
// its end (a compaction, a rewind) encodes again from the first change.
// A message maps to any number of the API's messages, kept together.
// Variant tells apart encodings of one message that depend on the request
// (thinking on or off, a cache breakpoint on it). Encoded is safe for
// concurrent use: sessions sharing a provider share it, each continuing
// its own line.
type Encoded struct {
	mu    sync.Mutex
	lines []*encodedLine // the least recently sent first; a line is not modified once kept
	size  int            // bytes of JSON the lines keep (a message two lines share counted in each)
	limit int            // EncodedCap, smaller in tests
	// held is about the bytes allocated for kept messages since the
	// last compaction, live or not: past twice size (and slack), what
	// the lines keep is copied out (compact) so that what they let go
	// is freed.
	held int
	// slab is where the next kept messages go: they are allocated
	// encodedSlab at a time, as a fresh process puts a whole transcript.
	slab []encodedMessage
	// arena is where the next kept JSON is copied: chunks, each twice
	// the last from 4 KiB up to encodedArena, instead of one allocation
	// per message (2,050 allocations of a fresh process's first request
	// of a 500-turn transcript, 54 in chunks;
	// BenchmarkEncodeLongTranscript/fresh). A short session's JSON
	// takes a small chunk.
	arena []byte
}

const (
	// encodedLines bounds how many lines (transcripts) an Encoded keeps.
	encodedLines = 256
	// encodedMoved is how many messages of the line a request continues
	// it may send in another variant and still take that line's place
	// (a cache breakpoint moves off two messages a request).
	encodedMoved = 4
	// encodedSlab is how many kept messages are allocated at once.
	encodedSlab = 64
	// encodedArena is the largest chunk of kept JSON; a message's JSON
	// over a quarter of it gets an allocation of its own.
	encodedArena = 64 << 10
	// encodedSlack is the held bytes past twice the size kept that
	// Encoded lets be before it compacts.
	encodedSlack = 4 << 20
)

// encodedLine is the messages one request sent, in order.
type encodedLine struct {
	msgs []*encodedMessage
	size int // bytes of their JSON
}

// encodedMessage is one message as it was encoded; it is not modified
// once kept.
type encodedMessage struct {
	msg     Message // compared in full before its JSON is used
	variant uint8
	json    []json.RawMessage
	one     [1]json.RawMessage // json's array when it is one message (most are)
}

// NewEncoded returns an empty Encoded.
func NewEncoded() *Encoded {
	return &Encoded{limit: EncodedCap}
}

// EncodedRequest is one request's use of an Encoded: Get, and Put when
// Get misses, for each of its messages in order, then Done. It is used
// by one goroutine.
type EncodedRequest struct {
	e     *Encoded
	in    []Message
	from  []*encodedLine    // the lines it continues, the most recent first: all as long a prefix of in
	match int               // how many of in are their first messages
	sent  []*encodedMessage // what it sends, in order
}

// Begin starts a request of the messages in, which the caller must not
// modify until Done.
func (e *Encoded) Begin(in []Message) *EncodedRequest {
	r := &EncodedRequest{e: e, in: in, sent: make([]*encodedMessage, 0, len(in))}
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := len(e.lines) - 1; i >= 0; i-- {
		l := e.lines[i]
		n := 0
		for n < len(l.msgs) && n < len(in) && sameMessage(l.msgs[n].msg, in[n]) {
			n++
		}
		switch {
		case n > r.match:
			r.match, r.from = n, append(r.from[:0], l)
		case n == r.match && n > 0:
			r.from = append(r.from, l) // another variant of the transcript, or a fork of it
		}
	}
	return r
}

// Get returns the JSON the request's next message was encoded to in
// variant; ok is false if it is not kept, and the caller encodes it and
// calls Put.
func (r *EncodedRequest) Get(variant uint8) (msgs []json.RawMessage, ok bool) {
	i := len(r.sent)
	if i >= r.match {
		return nil, false
	}
	for _, l := range r.from {
		if em := l.msgs[i]; em.variant == variant { // the message is the same: Begin compared it
			r.sent = append(r.sent, em)
			return em.json, true
		}
	}
	return nil, false
}

// Put keeps a copy of msgs, the JSON the request's next message was
// encoded to in variant, and returns it: the caller may reuse msgs' bytes.
func (r *EncodedRequest) Put(variant uint8, msgs ...json.RawMessage) []json.RawMessage {
	e := r.e
	e.mu.Lock()
	defer e.mu.Unlock()
	em := e.newMessage(r.in[len(r.sent)], variant, msgs)
	r.sent = append(r.sent, em)
	return em.json
}

// Done keeps what the request sent as a line: in place of a line it
// continued whole and sent most of as kept (all but encodedMoved, or a
// quarter), else as one more, so that a transcript sent in two variants
// (thinking on and off) keeps both. Past EncodedCap, or encodedLines, the
// lines least recently sent are let go. A request that did not reach its
// last message keeps nothing.
func (r *EncodedRequest) Done() {
	if len(r.sent) != len(r.in) || len(r.sent) == 0 {
		return
	}
	l := &encodedLine{msgs: r.sent}
	for _, em := range r.sent {
		l.size += jsonSize(em)
	}
	e := r.e
	e.mu.Lock()
	defer e.mu.Unlock()
	// The line it continued whole and sent the most of as kept is the
	// one it replaces, if that is most of it.
	var replace *encodedLine
	most := r.match - max(encodedMoved, r.match/4)
	for _, f := range r.from {
		if len(f.msgs) != r.match {
			continue
		}
		n := 0
		for k, em := range f.msgs {
			if r.sent[k] == em {
				n++
			}
		}
		if n >= most {
			replace, most = f, n+1
		}
	}
	if i := slices.Index(e.lines, replace); replace != nil && i >= 0 {
		e.lines = slices.Delete(e.lines, i, i+1)
		e.size -= replace.size
	}
	e.lines = append(e.lines, l)
	e.size += l.size
	for len(e.lines) > 1 && (e.size > e.limit || len(e.lines) > encodedLines) {
		e.size -= e.lines[0].size
		e.lines = slices.Delete(e.lines, 0, 1)
	}
	if e.held > 2*e.size+encodedSlack {
		e.compact()
	}
}

// compact copies the lines' messages and JSON to new slabs and chunks, a
// message two lines share once, so that the messages no line keeps are
// freed with the slabs and chunks they shared. The lines are replaced, not
// modified: a request under way keeps the one it continues. The caller
// holds mu.
func (e *Encoded) compact() {
	e.slab, e.arena, e.held = nil, nil, 0
	moved := map[*encodedMessage]*encodedMessage{}
	for i, l := range e.lines {
		nl := &encodedLine{msgs: make([]*encodedMessage, len(l.msgs)), size: l.size}
		for j, em := range l.msgs {
			n, ok := moved[em]
			if !ok {
				n = e.newMessage(em.msg, em.variant, em.json)
				moved[em] = n
			}
			nl.msgs[j] = n
		}
		e.lines[i] = nl
	}
}

// newMessage keeps m's JSON, msgs, in variant. The caller holds mu.
func (e *Encoded) newMessage(m Message, variant uint8, msgs []json.RawMessage) *encodedMessage {
	if len(e.slab) == 0 {
		e.slab = make([]encodedMessage, encodedSlab)
	}
	em := &e.slab[0]
	e.slab = e.slab[1:]
	*em = encodedMessage{msg: m, variant: variant}
	if len(msgs) == 1 {
		em.json = em.one[:]
	} else {
		em.json = make([]json.RawMessage, len(msgs))
	}
	for i, j := range msgs {
		em.json[i] = e.keep(j)
	}
	e.held += int(unsafe.Sizeof(*em)) + jsonSize(em)
	return em
}

// jsonSize is the bytes of em's JSON.
func jsonSize(em *encodedMessage) int {
	n := 0
	for _, j := range em.json {
		n += len(j)
	}
	return n
}

// keep returns a copy of j in the arena, its capacity its length (an
// append to it copies). The caller holds mu.
func (e *Encoded) keep(j json.RawMessage) json.RawMessage {
	if len(j) > encodedArena/4 {
		return bytes.Clone(j)
	}
	if cap(e.arena)-len(e.arena) < len(j) {
		e.arena = make([]byte, 0, min(max(2*cap(e.arena), 4<<10, len(j)), encodedArena))
	}
	n := len(e.arena)
	e.arena = append(e.arena, j...)
	return e.arena[n:len(e.arena):len(e.arena)]
}

// sameMessage reports whether a and b are the same message, field by field
// (TestEncodedCoversEveryField fails when session.Block gains a field this
// does not compare).
func sameMessage(a, b Message) bool {
	return a.Role == b.Role && slices.EqualFunc(a.Blocks, b.Blocks, func(x, y session.Block) bool {
		return x.Type == y.Type && x.Text == y.Text && x.ID == y.ID && x.Name == y.Name &&
			bytes.Equal(x.Input, y.Input) && x.ToolUseID == y.ToolUseID && x.IsError == y.IsError &&
			x.Signature == y.Signature && slices.EqualFunc(x.Images, y.Images, func(p, q session.Image) bool {
			return p.MediaType == q.MediaType && bytes.Equal(p.Data, q.Data)
		})
	})
}
