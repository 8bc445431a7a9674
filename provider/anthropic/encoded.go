package anthropic

import (
	"bytes"
	"cmp"
	"encoding/json"
	"hash/maphash"
	"slices"
	"sync"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// encodedCap bounds the JSON an encoded keeps; past it, the messages least
// recently sent are let go.
const encodedCap = 64 << 20

// encoded keeps the JSON each transcript message was encoded to, so that
// a request re-encodes only the messages that are new since the last one:
// every model call of a session sends the whole transcript, and the SDK's
// reflection-based encoder is slow: a 250 KB transcript of 500 turns takes
// the SDK about 25 ms to encode, and 1.5-3.7 ms to send as kept JSON
// (BenchmarkEncodeLongTranscript; figures in README). The SDK still
// encodes every message, once; a kept message is the same bytes, which is
// also what the prompt cache needs. It is safe for concurrent use:
// sessions sharing a provider share it.
type encoded struct {
	seed  maphash.Seed
	mu    sync.Mutex
	byKey map[uint64][]*encodedMessage
	size  int    // bytes of JSON kept
	gen   uint64 // bumped by every request
}

// encodedMessage is one message as it was encoded.
type encodedMessage struct {
	msg      provider.Message // compared in full: a hash match alone is not trusted
	thinking bool             // whether thinking blocks were sent
	mark     bool             // whether its last block carried a cache breakpoint
	json     json.RawMessage
	used     uint64 // the gen of the last request that sent it
}

func newEncoded() *encoded {
	return &encoded{seed: maphash.MakeSeed(), byKey: map[uint64][]*encodedMessage{}}
}

// begin starts a request and returns its generation.
func (e *encoded) begin() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gen++
	return e.gen
}

// get returns the JSON m was encoded to with the same thinking and mark,
// or nil.
func (e *encoded) get(gen uint64, m provider.Message, thinking, mark bool) json.RawMessage {
	k := e.key(m, thinking, mark)
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, em := range e.byKey[k] {
		if em.thinking == thinking && em.mark == mark && sameMessage(em.msg, m) {
			em.used = gen
			return em.json
		}
	}
	return nil
}

// put encodes mp, the param of m, keeps its JSON and returns it.
func (e *encoded) put(gen uint64, m provider.Message, thinking, mark bool, mp sdk.MessageParam) (json.RawMessage, error) {
	b, err := mp.MarshalJSON() // the SDK's encoding, already compact
	if err != nil {
		return nil, err
	}
	k := e.key(m, thinking, mark)
	em := &encodedMessage{msg: m, thinking: thinking, mark: mark, json: b, used: gen}
	e.mu.Lock()
	e.byKey[k] = append(e.byKey[k], em)
	e.size += len(b)
	e.mu.Unlock()
	return b, nil
}

// trim lets go of the least recently sent messages while more than
// encodedCap bytes are kept, down to half of it.
func (e *encoded) trim() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.size <= encodedCap {
		return
	}
	var all []*encodedMessage
	for _, ems := range e.byKey {
		all = append(all, ems...)
	}
	slices.SortFunc(all, func(a, b *encodedMessage) int { return cmp.Compare(b.used, a.used) })
	e.byKey, e.size = map[uint64][]*encodedMessage{}, 0
	for _, em := range all {
		if e.size+len(em.json) > encodedCap/2 {
			break
		}
		k := e.key(em.msg, em.thinking, em.mark)
		e.byKey[k] = append(e.byKey[k], em)
		e.size += len(em.json)
	}
}

// key hashes everything of m that its JSON depends on.
func (e *encoded) key(m provider.Message, thinking, mark bool) uint64 {
	var h maphash.Hash
	h.SetSeed(e.seed)
	h.WriteString(m.Role)
	flags := byte(0)
	if thinking {
		flags |= 1
	}
	if mark {
		flags |= 2
	}
	h.WriteByte(flags)
	for _, b := range m.Blocks {
		h.WriteByte(0)
		for _, s := range [...]string{b.Type, b.Text, b.ID, b.Name, b.ToolUseID, b.Signature} {
			h.WriteString(s)
			h.WriteByte(0)
		}
		h.Write(b.Input)
		if b.IsError {
			h.WriteByte(1)
		}
		for _, im := range b.Images {
			h.WriteString(im.MediaType)
			h.Write(im.Data)
		}
	}
	return h.Sum64()
}

// sameMessage reports whether a and b are the same message, field by field
// (TestEncodedCoversEveryField fails when session.Block gains a field this
// does not compare).
func sameMessage(a, b provider.Message) bool {
	return a.Role == b.Role && slices.EqualFunc(a.Blocks, b.Blocks, func(x, y session.Block) bool {
		return x.Type == y.Type && x.Text == y.Text && x.ID == y.ID && x.Name == y.Name &&
			bytes.Equal(x.Input, y.Input) && x.ToolUseID == y.ToolUseID && x.IsError == y.IsError &&
			x.Signature == y.Signature && slices.EqualFunc(x.Images, y.Images, func(p, q session.Image) bool {
			return p.MediaType == q.MediaType && bytes.Equal(p.Data, q.Data)
		})
	})
}
