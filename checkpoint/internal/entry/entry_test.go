package entry

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/lite-agent/lite-agent/session"
)

// genSummary draws summaries with every field set or not.
func genSummary(t *rapid.T) session.Summary {
	str := rapid.StringMatching(`[a-z0-9 /é\x00-\x03]{0,40}`)
	s := session.Summary{
		ID:        str.Draw(t, "id"),
		Kind:      rapid.SampledFrom([]string{"", "tasklist"}).Draw(t, "kind"),
		Namespace: str.Draw(t, "namespace"),
		Workdir:   str.Draw(t, "workdir"),
		Model:     str.Draw(t, "model"),
		Title:     str.Draw(t, "title"),
		Head:      rapid.Int64Range(0, 1<<40).Draw(t, "head"),
		Messages:  rapid.IntRange(0, 1<<30).Draw(t, "messages"),
		Status:    session.Status(rapid.SampledFrom([]string{"", "new", "running", "completed", "interrupted"}).Draw(t, "status")),
		Created:   Micro(rapid.Int64Range(-1<<50, 1<<52).Draw(t, "created")),
		Updated:   Micro(rapid.Int64Range(-1<<50, 1<<52).Draw(t, "updated")),
	}
	if rapid.Bool().Draw(t, "parent") {
		s.Parent = &session.ForkRef{Session: str.Draw(t, "parent session"), Seq: rapid.Int64().Draw(t, "parent seq")}
	}
	if rapid.Bool().Draw(t, "imported") {
		s.Imported = &session.Import{From: str.Draw(t, "from"), Host: str.Draw(t, "host"), At: Micro(rapid.Int64Range(-1<<50, 1<<52).Draw(t, "at")),
			Head: rapid.Int64().Draw(t, "exported head"), Salvaged: rapid.Bool().Draw(t, "salvaged")}
	}
	s.Open = rapid.SliceOfN(str, 0, 5).Draw(t, "open")
	if len(s.Open) == 0 {
		s.Open = nil
	}
	s.Fold = rapid.IntRange(0, session.FoldVersion).Draw(t, "fold")
	return s
}

func TestEntryRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		want := genSummary(t)
		b := Encode(&want)
		got, err := Decode(string(b))
		if err != nil {
			t.Fatalf("decode %x: %v", b, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
	})
}

func TestEntryZeroTimes(t *testing.T) {
	got, err := Decode(string(Encode(&session.Summary{ID: "s"})))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Created.IsZero() || !got.Updated.IsZero() {
		t.Fatalf("zero times came back as %v and %v", got.Created, got.Updated)
	}
}

func TestEntryRejectsDamage(t *testing.T) {
	full := Encode(&session.Summary{
		ID: "s1", Namespace: "ns", Title: "hello", Head: 300, Status: session.StatusRunning,
		Created: time.Unix(1e9, 0), Updated: time.Unix(1e9, 5000),
		Parent: &session.ForkRef{Session: "s0", Seq: 4}, Open: []string{"c1", "c2"},
	})
	cases := map[string][]byte{
		"empty":            nil,
		"version 0":        append([]byte{0}, full[1:]...),
		"trailing bytes":   append(append([]byte(nil), full...), 0),
		"bad parent flag":  badParentFlag(t, full),
		"huge string":      append([]byte{Version}, binary.AppendUvarint(nil, 1<<40)...),
		"varint overflow":  append([]byte{Version}, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
		"open count > len": append(full[:len(full)-8:len(full)-8], 100),
	}
	for cut := 1; cut < len(full); cut++ {
		cases[fmt.Sprintf("cut at %d", cut)] = full[:cut]
	}
	for name, b := range cases {
		if _, err := Decode(string(b)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: decode %x: error %v, want ErrMalformed", name, b, err)
		}
	}
}

// badParentFlag returns full with its parent flag byte set to 7.
func badParentFlag(t *testing.T, full []byte) []byte {
	t.Helper()
	noParent := Encode(&session.Summary{
		ID: "s1", Namespace: "ns", Title: "hello", Head: 300, Status: session.StatusRunning,
		Created: time.Unix(1e9, 0), Updated: time.Unix(1e9, 5000),
	})
	// Both entries agree up to the parent flag, the last byte of noParent but
	// its open count and its fold.
	i := len(noParent) - 3
	if noParent[i] != 0 || full[i] != 1 {
		t.Fatalf("parent flag not at byte %d of %x", i, full)
	}
	b := append([]byte(nil), full...)
	b[i] = 7
	return b
}

func TestEntriesStream(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		want := rapid.SliceOfN(rapid.Custom(genSummary), 0, 20).Draw(t, "summaries")
		var stream []byte
		for i := range want {
			stream = append(stream, Encode(&want[i])...)
		}
		got, err := DecodeAll(string(stream))
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 {
			want = nil
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("(-want +got):\n%s", diff)
		}
		if cap(got) != len(got) {
			t.Fatalf("DecodeAll made room for %d summaries and decoded %d: it must count them first", cap(got), len(got))
		}
		if len(stream) > 0 {
			cut := rapid.IntRange(0, len(stream)-1).Draw(t, "cut")
			if _, err := DecodeAll(string(stream[:cut])); cut > 0 && err == nil {
				// A cut between two entries leaves a valid shorter stream.
				if !entryBoundary(want, cut) {
					t.Fatalf("a stream cut at %d of %d decoded", cut, len(stream))
				}
			}
		}
	})
}

// entryBoundary reports whether offset falls between two encoded entries.
func entryBoundary(list []session.Summary, offset int) bool {
	at := 0
	for i := range list {
		if at == offset {
			return true
		}
		at += len(Encode(&list[i]))
	}
	return at == offset
}

func FuzzDecodeEntry(f *testing.F) {
	f.Add(Encode(&session.Summary{ID: "s", Namespace: "n", Open: []string{"a"}, Parent: &session.ForkRef{Session: "p", Seq: 2}}))
	f.Add([]byte{Version})
	f.Fuzz(func(t *testing.T, b []byte) {
		// As a listing: whatever it decodes, it made room for exactly.
		if all, err := DecodeAll(string(b)); err == nil && cap(all) != len(all) {
			t.Fatalf("DecodeAll(%x) made room for %d summaries and decoded %d", b, cap(all), len(all))
		}
		s, err := Decode(string(b))
		if err != nil || b[0] < Version {
			return // an older version's entry encodes as the current one
		}
		// Whatever decodes must encode back to the same bytes.
		if again := Encode(&s); string(again) != string(b) {
			t.Fatalf("decoded %x to %+v, which encodes as %x", b, s, again)
		}
	})
}

// TestEntryVersion1 decodes an entry written before fold versions: the
// summary comes back whole, with fold version 1 (which wrote it).
func TestEntryVersion1(t *testing.T) {
	want := session.Summary{ID: "s1", Namespace: "ns", Title: "hi", Head: 7, Messages: 2, Status: session.StatusCompleted, Fold: 1,
		Created: time.Unix(1e9, 0).UTC(), Updated: time.Unix(1e9, 5000).UTC(), Open: []string{"c1"}}
	v2 := Encode(&want)
	if v2[0] != Version || v2[len(v2)-1] != 2 {
		t.Fatalf("entry %x: want version %d and a fold of 1 at the end", v2, Version)
	}
	body := v2[2 : len(v2)-1] // one length byte, then the body without its fold
	v1 := append([]byte{1}, binary.AppendUvarint(nil, uint64(len(body)))...)
	v1 = append(v1, body...)
	got, err := Decode(string(v1))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("version 1 entry (-want +got):\n%s", diff)
	}
	want.Fold = 0
	if got, err := Decode(string(Encode(&want))); err != nil || got.Fold != 0 {
		t.Errorf("version 2 entry: fold %d, %v", got.Fold, err)
	}
}

// TestEntryNewer decodes what a newer lite-agent could write, an entry of
// the next format (whatever its body) and one folded by the next fold
// version: each is a *session.NewerError that says to upgrade, never
// ErrMalformed, in Decode and in DecodeAll.
func TestEntryNewer(t *testing.T) {
	cur := session.Summary{ID: "s1", Namespace: "ns", Head: 3, Fold: session.FoldVersion}
	good := Encode(&cur)
	nextFormat := append([]byte{Version + 1}, 0xff, 0xfe) // a body this build cannot parse
	cur.Fold = session.FoldVersion + 1
	nextFold := Encode(&cur)
	for _, c := range []struct {
		name string
		b    []byte
		all  bool // decode as a listing
	}{
		{"next entry format", nextFormat, false},
		{"format 255", append([]byte{255}, good[1:]...), false},
		{"next fold version", nextFold, false},
		{"next entry format in a listing", append(append([]byte(nil), good...), nextFormat...), true},
		{"next fold version in a listing", append(append([]byte(nil), good...), nextFold...), true},
	} {
		name, b := c.name, c.b
		_, err := Decode(string(b))
		if c.all {
			_, err = DecodeAll(string(b))
		}
		var ne *session.NewerError
		if !errors.As(err, &ne) || !errors.Is(err, session.ErrNewer) || errors.Is(err, ErrMalformed) {
			t.Errorf("%s: decode %x: error %v, want a *session.NewerError", name, b, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "newer lite-agent") || !strings.Contains(msg, "upgrade") || strings.Contains(msg, "damaged") {
			t.Errorf("%s: message %q should say a newer lite-agent wrote it and to upgrade", name, msg)
		}
	}
}
