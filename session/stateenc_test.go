package session

import (
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

// notEncoded names the State fields EncodeState leaves out on purpose:
// the block slab is spare room for the blocks of later messages.
var notEncoded = map[string]bool{"slab": true}

// fill sets every field reachable from v, exported or not, to a value
// that is not its zero, one distinct value per leaf (n counts them), and
// fails on a kind it does not know, so that a new field of State, of any
// type, is covered by TestStateEncodingEveryField without editing it.
func fill(t testing.TB, v reflect.Value, n *int, path string) {
	t.Helper()
	if !v.CanSet() {
		v = reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
	}
	*n++
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Unix(1_700_000_000+int64(*n), int64(*n)*1000).UTC()))
		return
	case v.Type() == reflect.TypeFor[Status]():
		v.SetString(string(StatusRunning))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(path + "#" + string(rune('a'+*n%26)))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n) * 7)
	case reflect.Uint8:
		v.SetUint(uint64(*n))
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if v.Type() == reflect.TypeFor[State]() && notEncoded[f.Name] {
				continue
			}
			fill(t, v.Field(i), n, path+"."+f.Name)
		}
	case reflect.Pointer:
		if strings.Count(path, "*") > 2 { // Import.Previous: three deep is enough
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), n, path+"*")
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(t, s.Index(i), n, path+"[]")
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(t, k, n, path+"{k}")
			fill(t, e, n, path+"{v}")
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	default:
		t.Fatalf("fill: %s is a %s, which the test does not know: teach fill and EncodeState about it", path, v.Type())
	}
}

// TestStateEncodingEveryField fills every field of a State and checks
// that it decodes as it was encoded: a field added to State (or to a type
// it holds) and not to EncodeState fails here.
func TestStateEncodingEveryField(t *testing.T) {
	var s State
	var n int
	fill(t, reflect.ValueOf(&s).Elem(), &n, "State")
	b := EncodeState(nil, &s)
	got, err := DecodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&s, got, cmp.AllowUnexported(State{}, blockSlab{})); diff != "" {
		t.Fatalf("the decoded state differs (-encoded +decoded):\n%s", diff)
	}
	// Nil and empty stay what they were.
	var empty State
	empty.messages, empty.hazards, empty.started = []Message{}, []Hazard{}, map[string]bool{}
	got, err = DecodeState(EncodeState(nil, &empty))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&empty, got) {
		t.Fatalf("an empty state decodes as %#v", got)
	}
}

// TestStateEncodingFoldsOn folds random logs, encodes the state after
// every event, decodes it and folds the rest: the result is the fold of
// the whole log.
func TestStateEncodingFoldsOn(t *testing.T) {
	logs := 100
	if testing.Short() {
		logs = 10
	}
	for seed := range logs {
		g := &payloadGen{r: rand.New(rand.NewPCG(uint64(seed), 29)), text: genTexts[seed%len(genTexts)]}
		events := randomLog(g, 40)
		want := withoutSlab(Replay(events))
		for cut := range len(events) + 1 {
			st, err := DecodeState(EncodeState(nil, Replay(events[:cut])))
			if err != nil {
				t.Fatalf("seed %d, cut %d: %v", seed, cut, err)
			}
			for _, e := range events[cut:] {
				st.Apply(e)
			}
			if got := withoutSlab(st); !reflect.DeepEqual(want, got) {
				t.Fatalf("seed %d, cut %d: the state differs (-whole +resumed):\n%s", seed, cut, cmp.Diff(want, got, cmp.AllowUnexported(State{}, blockSlab{})))
			}
		}
	}
}

// TestStateEncodingRefused checks what DecodeState says of states it must
// not use: damaged, cut short, of an older or a newer format or fold.
func TestStateEncodingRefused(t *testing.T) {
	g := &payloadGen{r: rand.New(rand.NewPCG(3, 29)), text: genTexts[0]}
	good := EncodeState(nil, Replay(randomLog(g, 30)))
	// withHeader is good with other versions in its header.
	withHeader := func(format, fold uint64) []byte {
		r := stateReader{b: good, off: len(stateMagic)}
		r.uint()
		r.uint()
		w := stateWriter{b: []byte(stateMagic)}
		w.uint(format)
		w.uint(fold)
		w.b = append(w.b, good[r.off:len(good)-4]...)
		sum := crc32Of(w.b)
		return append(w.b, byte(sum), byte(sum>>8), byte(sum>>16), byte(sum>>24))
	}
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)/2] ^= 0x10
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrStateDamaged},
		{"not a state", []byte(`{"seq":1}`), ErrStateDamaged},
		{"cut short", good[:len(good)-9], ErrStateDamaged},
		{"a bit flipped", flipped, ErrStateDamaged},
		{"newer format", withHeader(StateFormat+1, FoldVersion), ErrNewer},
		{"older format", withHeader(StateFormat-1, FoldVersion), ErrStateStale},
		{"newer fold", withHeader(StateFormat, FoldVersion+1), ErrNewer},
		{"older fold", withHeader(StateFormat, FoldVersion-1), ErrStateStale},
	}
	if _, err := DecodeState(withHeader(StateFormat, FoldVersion)); err != nil {
		t.Fatalf("the re-headed state itself: %v", err)
	}
	for _, c := range cases {
		st, err := DecodeState(c.b)
		if !errors.Is(err, c.want) || st != nil {
			t.Errorf("%s: got %v, %v; want %v", c.name, st, err, c.want)
		}
	}
}

// FuzzDecodeState feeds DecodeState damaged and arbitrary bytes (the
// checksum is recomputed half the time, so that the decoder itself is
// reached): it never panics, and what it accepts encodes and decodes to
// the same State.
func FuzzDecodeState(f *testing.F) {
	g := &payloadGen{r: rand.New(rand.NewPCG(5, 29)), text: genTexts[1]}
	f.Add(EncodeState(nil, Replay(randomLog(g, 12))), true)
	f.Add(EncodeState(nil, &State{}), false)
	var full State
	var n int
	fill(f, reflect.ValueOf(&full).Elem(), &n, "State")
	f.Add(EncodeState(nil, &full), true)
	f.Fuzz(func(t *testing.T, b []byte, resum bool) {
		if resum && len(b) >= len(stateMagic)+4 {
			b = append([]byte(stateMagic), b[len(stateMagic):len(b)-4]...)
			sum := crc32Of(b)
			b = append(b, byte(sum), byte(sum>>8), byte(sum>>16), byte(sum>>24))
		}
		st, err := DecodeState(b)
		if err != nil {
			if st != nil {
				t.Fatal("a state with an error")
			}
			return
		}
		again, err := DecodeState(EncodeState(nil, st))
		if err != nil {
			t.Fatalf("a decoded state does not decode once encoded again: %v", err)
		}
		if diff := cmp.Diff(st, again, cmp.AllowUnexported(State{}, blockSlab{})); diff != "" {
			t.Fatalf("the state changed when encoded again:\n%s", diff)
		}
	})
}

func crc32Of(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// BenchmarkStateEncoding encodes and decodes the state of a 500-turn
// session (a prompt, a tool call, its result and an answer a turn):
// what a resume from a saved state decodes instead of replaying the log.
// go test -run '^$' -bench StateEncoding -benchmem ./session
func BenchmarkStateEncoding(b *testing.B) {
	var events []Event
	add := func(t Type, p any) { e := MustNew(t, p); e.Seq = int64(len(events) + 1); events = append(events, e) }
	add(TypeSessionStarted, SessionStarted{ID: "s", Namespace: "ns"})
	text := strings.Repeat("words of a transcript ", 12)
	for i := range 500 {
		id := fmt.Sprintf("c%d", i)
		add(TypeUserPrompt, UserPrompt{Text: text})
		add(TypeAssistantMessage, AssistantMessage{Blocks: []Block{{Type: BlockText, Text: text}, {Type: BlockToolUse, ID: id, Name: "bash", Input: []byte(`{"command":"ls -la"}`)}}})
		add(TypeToolStarted, ToolStarted{CallID: id, Tool: "bash", Input: []byte(`{"command":"ls -la"}`)})
		add(TypeToolFinished, ToolFinished{CallID: id, Tool: "bash", Output: text})
		add(TypeAssistantMessage, AssistantMessage{Blocks: []Block{{Type: BlockText, Text: text}}})
		add(TypeTurnCompleted, TurnCompleted{StopReason: "end_turn"})
	}
	st := Replay(events)
	enc := EncodeState(nil, st)
	b.Run("replay", func(b *testing.B) {
		for b.Loop() {
			Replay(events)
		}
	})
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			EncodeState(nil, st)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			if _, err := DecodeState(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
