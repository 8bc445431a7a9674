package workspace

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
)

// wire is a manifest's stored form: whole (Base "") or a delta against the
// whole manifest whose encoding's digest is Base.
type wire struct {
	Base  string    `json:"base,omitempty"`
	Taken time.Time `json:"taken"`
	// Entries: a whole manifest's entries; a delta's entries new or
	// different from Base's.
	Entries []Entry `json:"entries"`
	// Deleted are the paths of Base's entries a delta no longer has.
	Deleted    []string `json:"deleted,omitempty"`
	Unreadable []string `json:"unreadable,omitempty"`
}

// One encoder and decoder serve every call (EncodeAll and DecodeAll are
// safe for concurrent use): making one costs more than encoding a small
// delta.
var (
	encoder = sync.OnceValue(func() *zstd.Encoder {
		e, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest))
		return e
	})
	decoder = sync.OnceValue(func() *zstd.Decoder {
		d, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
		return d
	})
)

// Encode writes m whole and compactly (zstd-compressed JSON): a manifest
// of 10,000 files is a few hundred kilobytes as JSON and a small part of
// that compressed. The encoding of equal manifests is equal.
func (m *Manifest) Encode() ([]byte, error) {
	return encode(wire{Taken: m.Taken, Entries: m.Entries, Unreadable: m.Unreadable})
}

// EncodeDelta writes m as its difference from base, whose whole encoding
// (Encode) has the digest baseDigest: what a command changed, not the
// tree. Decode needs base to read it back. n is the number of entries the
// delta holds (new, changed or deleted), for the caller to choose a whole
// encoding when the delta grows large.
func (m *Manifest) EncodeDelta(base *Manifest, baseDigest string) (data []byte, n int, err error) {
	w := wire{Base: baseDigest, Taken: m.Taken, Entries: []Entry{}, Unreadable: m.Unreadable}
	a, b := base.Entries, m.Entries
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i].Path < b[j].Path:
			w.Deleted = append(w.Deleted, a[i].Path)
			i++
		case i == len(a) || b[j].Path < a[i].Path:
			w.Entries = append(w.Entries, b[j])
			j++
		default:
			if a[i] != b[j] {
				w.Entries = append(w.Entries, b[j])
			}
			i++
			j++
		}
	}
	data, err = encode(w)
	return data, len(w.Entries) + len(w.Deleted), err
}

func encode(w wire) ([]byte, error) {
	raw, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	return encoder().EncodeAll(raw, nil), nil
}

// Decode reads a manifest Encode or EncodeDelta wrote. For a delta, base
// is called with the digest of the whole manifest it is against; it may be
// nil when data is known to be whole (a delta then is an error).
func Decode(data []byte, base func(digest string) (*Manifest, error)) (*Manifest, error) {
	raw, err := decoder().DecodeAll(data, nil)
	if err != nil {
		return nil, fmt.Errorf("decode manifest: %w", err)
	}
	var w wire
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("decode manifest: %w", err)
	}
	if err := sorted(w.Entries); err != nil {
		return nil, err
	}
	m := &Manifest{Taken: w.Taken, Entries: w.Entries, Unreadable: w.Unreadable}
	if w.Base == "" {
		return m, nil
	}
	if base == nil {
		return nil, fmt.Errorf("decode manifest: a delta against %s, and no way to read it", w.Base)
	}
	b, err := base(w.Base)
	if err != nil {
		return nil, fmt.Errorf("decode manifest: its base %s: %w", w.Base, err)
	}
	deleted := make(map[string]bool, len(w.Deleted))
	for _, p := range w.Deleted {
		deleted[p] = true
	}
	kept := make([]Entry, 0, len(b.Entries))
	for _, e := range b.Entries {
		if !deleted[e.Path] {
			kept = append(kept, e)
		}
	}
	m.Entries = merge(kept, w.Entries, nil)
	return m, nil
}

// sorted checks that entries are in strictly increasing path order.
func sorted(es []Entry) error {
	for i := 1; i < len(es); i++ {
		if strings.Compare(es[i-1].Path, es[i].Path) >= 0 {
			return fmt.Errorf("decode manifest: entries out of order at %q", es[i].Path)
		}
	}
	return nil
}
