package provider

import (
	"bytes"
	"cmp"
	"encoding/json"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/lite-agent/lite-agent/session"
)

// EncodedCap bounds the JSON an Encoded keeps; past it, the messages least
// recently sent are let go.
const EncodedCap = 64 << 20

// Encoded keeps the JSON a provider encoded each transcript message to,
// so that a request encodes only the messages new since the last one:
// every model call sends the whole transcript (a 500-turn transcript in
// provider/anthropic: 2.2-2.4 ms to encode fresh, 0.7 ms from kept JSON;
// BenchmarkEncodeLongTranscript, figures in README). A kept message is sent as the same bytes, which is also what a prompt
// cache needs. A message maps to any number of the API's messages, kept
// together. Variant tells apart encodings of one message that depend on
// the request (thinking on or off, a cache breakpoint on it). Encoded is
// safe for concurrent use: sessions sharing a provider share it.
type Encoded struct {
	seed  maphash.Seed
	mu    sync.Mutex
	byKey map[uint64]*encodedMessage // a chain (next) where keys collide
	size  int                        // bytes of JSON kept
	limit int                        // EncodedCap, smaller in tests
	gen   uint64                     // bumped by every request
	// fresh is the gen of a request begun while nothing was kept: its
	// Gets miss without a lookup (a fresh process's first request).
	fresh uint64
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
	// encodedSlab is how many kept messages are allocated at once.
	encodedSlab = 64
	// encodedArena is the largest chunk of kept JSON; a message's JSON
	// over a quarter of it gets an allocation of its own.
	encodedArena = 64 << 10
)

// encodedMessage is one message as it was encoded.
type encodedMessage struct {
	msg     Message // compared in full: a hash match alone is not trusted
	variant uint8
	json    []json.RawMessage
	one     [1]json.RawMessage // json's array when it is one message (most are)
	used    uint64             // the gen of the last request that sent it
	next    *encodedMessage    // the next one with the same key
}

// Miss is a message Get did not find, for Put to keep once it is encoded
// (its key is not computed twice).
type Miss struct {
	key     uint64
	msg     Message
	variant uint8
}

// NewEncoded returns an empty Encoded.
func NewEncoded() *Encoded {
	return &Encoded{seed: maphash.MakeSeed(), byKey: map[uint64]*encodedMessage{}, limit: EncodedCap}
}

// Begin starts a request of n messages and returns its generation, for
// Get and Put. n sizes the table of an Encoded that keeps nothing yet.
func (e *Encoded) Begin(n int) uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gen++
	if len(e.byKey) == 0 {
		e.fresh = e.gen
		if n > 8 {
			e.byKey = make(map[uint64]*encodedMessage, n)
		}
	}
	return e.gen
}

// Get returns the JSON m was encoded to in variant; ok is false if it was
// not kept, and miss is then what Put needs to keep it.
func (e *Encoded) Get(gen uint64, m Message, variant uint8) (msgs []json.RawMessage, miss Miss, ok bool) {
	k := e.key(m, variant)
	e.mu.Lock()
	defer e.mu.Unlock()
	if gen == e.fresh { // nothing was kept when it began: a repeat in it is kept twice, no more
		return nil, Miss{key: k, msg: m, variant: variant}, false
	}
	for em := e.byKey[k]; em != nil; em = em.next {
		if em.variant == variant && sameMessage(em.msg, m) {
			em.used = gen
			return em.json, Miss{}, true
		}
	}
	return nil, Miss{key: k, msg: m, variant: variant}, false
}

// Put keeps a copy of msgs, the JSON the message Get missed was encoded
// to, and returns it: the caller may reuse msgs' bytes.
func (e *Encoded) Put(gen uint64, miss Miss, msgs ...json.RawMessage) []json.RawMessage {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.slab) == 0 {
		e.slab = make([]encodedMessage, encodedSlab)
	}
	em := &e.slab[0]
	e.slab = e.slab[1:]
	*em = encodedMessage{msg: miss.msg, variant: miss.variant, used: gen, next: e.byKey[miss.key]}
	if len(msgs) == 1 {
		em.json = em.one[:]
	} else {
		em.json = make([]json.RawMessage, len(msgs))
	}
	for i, j := range msgs {
		em.json[i] = e.keep(j)
		e.size += len(j)
	}
	e.byKey[miss.key] = em
	return em.json
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

// Trim lets go of the least recently sent messages while more than
// EncodedCap bytes are kept, down to half of it.
func (e *Encoded) Trim() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.size <= e.limit {
		return
	}
	var all []*encodedMessage
	for _, em := range e.byKey {
		for ; em != nil; em = em.next {
			all = append(all, em)
		}
	}
	slices.SortFunc(all, func(a, b *encodedMessage) int { return cmp.Compare(b.used, a.used) })
	// What is kept is copied to new chunks, so that a message kept does
	// not keep a chunk of messages let go.
	e.byKey, e.size, e.arena = map[uint64]*encodedMessage{}, 0, nil
	for i, em := range all {
		n := 0
		for _, j := range em.json {
			n += len(j)
		}
		if e.size+n > e.limit/2 {
			// What is let go is cleared: a slab kept for the messages
			// beside it must not keep their transcript and JSON.
			for _, gone := range all[i:] {
				*gone = encodedMessage{}
			}
			break
		}
		for i, j := range em.json {
			em.json[i] = e.keep(j)
		}
		k := e.key(em.msg, em.variant)
		em.next = e.byKey[k]
		e.byKey[k] = em
		e.size += n
	}
}

// key hashes everything of m that its JSON depends on: each field that is
// not empty in one maphash.String or maphash.Bytes call, mixed with the
// field's place. Hashing the fields through one streaming maphash.Hash
// was most of what a request of a 500-turn transcript cost when every
// message was kept (BenchmarkEncodeLongTranscript/kept).
func (e *Encoded) key(m Message, variant uint8) uint64 {
	k := mix(uint64(variant)+1, maphash.String(e.seed, m.Role))
	for _, b := range m.Blocks {
		k = mix(k, 0)
		for i, s := range [...]string{b.Type, b.Text, b.ID, b.Name, b.ToolUseID, b.Signature} {
			if s != "" {
				k = mix(k, uint64(i+1)<<56^maphash.String(e.seed, s))
			}
		}
		if len(b.Input) > 0 {
			k = mix(k, 7<<56^maphash.Bytes(e.seed, b.Input))
		}
		if b.IsError {
			k = mix(k, 8<<56)
		}
		for _, im := range b.Images {
			k = mix(k, 9<<56^maphash.String(e.seed, im.MediaType))
			k = mix(k, 10<<56^maphash.Bytes(e.seed, im.Data))
		}
	}
	return k
}

// mix folds v into the running key k.
func mix(k, v uint64) uint64 {
	k = (k ^ v) * 0x9e3779b97f4a7c15
	return k ^ k>>29
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
