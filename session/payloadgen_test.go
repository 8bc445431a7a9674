package session

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// payloadGen writes random payloads for the types replay scans, in every way
// JSON allows writing them (escapes, white space, member order, unknown
// members) and, now and then, in ways encoding/json reads otherwise or
// refuses (differently cased or repeated keys, nulls, wrong types, numbers
// that do not fit, broken base64).
type payloadGen struct {
	r    *rand.Rand
	text string // text values are cut from it
	b    []byte
}

// Kinds of field values.
const (
	kindString = iota
	kindID     // a string from a few call ids, so that events refer to each other
	kindPath
	kindBlockType
	kindBool
	kindInt64
	kindUint32
	kindBase64
	kindStrings
	kindPaths
	kindRaw
	kindFiles
	kindBlocks
	kindUsage
	numKinds
)

type genField struct {
	name string
	kind int
}

var genTypes = map[Type][]genField{
	TypeUserPrompt:       {{"text", kindString}, {"background", kindBool}},
	TypeAssistantMessage: {{"blocks", kindBlocks}, {"stop_reason", kindString}, {"usage", kindUsage}, {"model", kindString}},
	TypeToolStarted:      {{"call_id", kindID}, {"tool", kindString}, {"input", kindRaw}, {"paths", kindPaths}, {"approval", kindString}},
	TypeFileSnapshot: {{"call_id", kindID}, {"path", kindPath}, {"existed", kindBool}, {"mode", kindUint32},
		{"content", kindBase64}, {"digest", kindString}},
	TypeToolFinished: {{"call_id", kindID}, {"tool", kindString}, {"output", kindString}, {"is_error", kindBool},
		{"denied", kindBool}, {"files", kindFiles}, {"untracked", kindBool}},
	TypeRecoveryAcknowledged: {{"tokens", kindStrings}, {"call_ids", kindStrings}},
}

var (
	blockGenFields = []genField{{"type", kindBlockType}, {"text", kindString}, {"id", kindID}, {"name", kindString},
		{"input", kindRaw}, {"tool_use_id", kindID}, {"is_error", kindBool}}
	usageGenFields = []genField{{"input_tokens", kindInt64}, {"output_tokens", kindInt64}}
)

// payload returns a random payload for type t. With odd set, it may be one
// that encoding/json refuses or that the fast path must give up on.
func (g *payloadGen) payload(t Type, odd bool) []byte {
	g.b = g.b[:0]
	g.space()
	g.object(genTypes[t], odd)
	g.space()
	return append([]byte(nil), g.b...)
}

func (g *payloadGen) chance(n int) bool { return g.r.IntN(n) == 0 }

func (g *payloadGen) space() {
	for g.chance(6) {
		g.b = append(g.b, " \t\n\r"[g.r.IntN(4)])
	}
}

func (g *payloadGen) object(fields []genField, odd bool) {
	g.b = append(g.b, '{')
	n := 0
	member := func(key string, write func()) {
		if n > 0 {
			g.space()
			g.b = append(g.b, ',')
		}
		n++
		g.space()
		if odd && g.chance(30) {
			g.str(key) // perhaps escaped
		} else {
			g.b = strconv.AppendQuote(g.b, key)
		}
		g.space()
		g.b = append(g.b, ':')
		g.space()
		write()
	}
	for _, i := range g.r.Perm(len(fields)) {
		f := fields[i]
		if g.chance(4) {
			continue
		}
		key := f.name
		if odd && g.chance(30) {
			key = strings.ToUpper(key[:1]) + key[1:]
		}
		member(key, func() { g.value(f.kind, odd) })
		if odd && g.chance(30) {
			member(f.name, func() { g.value(f.kind, odd) })
		}
		if g.chance(12) {
			member(fmt.Sprintf("x_%d", g.r.IntN(3)), func() { g.value(kindRaw, odd) })
		}
	}
	g.space()
	g.b = append(g.b, '}')
}

func (g *payloadGen) value(kind int, odd bool) {
	if odd && g.chance(25) {
		if g.chance(2) {
			g.b = append(g.b, "null"...)
			return
		}
		kind = g.r.IntN(numKinds) // most likely the wrong type
	}
	switch kind {
	case kindString:
		g.str(g.cut())
	case kindID:
		g.str([]string{"a", "b", "c"}[g.r.IntN(3)])
	case kindPath:
		g.str([]string{"x.go", "y.go"}[g.r.IntN(2)])
	case kindBlockType:
		g.str([]string{BlockText, BlockToolUse, BlockToolUse, BlockToolResult, "image"}[g.r.IntN(5)])
	case kindBool:
		g.b = strconv.AppendBool(g.b, g.chance(2))
	case kindInt64:
		if odd && g.chance(5) {
			g.b = append(g.b, []string{"1e3", "1.0", "-0", "9223372036854775807", "9223372036854775808", "-9223372036854775808", "123456789012345678"}[g.r.IntN(7)]...)
			return
		}
		g.b = strconv.AppendInt(g.b, g.r.Int64N(1<<40)-1<<20, 10)
	case kindUint32:
		if odd && g.chance(5) {
			g.b = append(g.b, []string{"-1", "4294967295", "4294967296", "1e2", "0", "999999999", "1000000000"}[g.r.IntN(7)]...)
			return
		}
		g.b = strconv.AppendUint(g.b, uint64(g.r.Uint32N(0o1000)), 10)
	case kindBase64:
		enc := base64.StdEncoding.EncodeToString([]byte(g.cut()))
		if odd && g.chance(4) && len(enc) > 0 {
			switch g.r.IntN(4) {
			case 0:
				enc = strings.TrimRight(enc, "=")
			case 1:
				i := g.r.IntN(len(enc))
				enc = enc[:i] + "\r\n" + enc[i:]
			case 2:
				enc = enc[:len(enc)-1]
			default:
				enc = enc + "QQ=="
			}
		}
		if odd {
			g.str(enc) // perhaps with escapes, which the fast path leaves to encoding/json
		} else {
			g.b = strconv.AppendQuote(g.b, enc)
		}
	case kindStrings, kindPaths:
		g.array(g.r.IntN(3), func() {
			if kind == kindPaths {
				g.value(kindPath, odd)
			} else {
				g.value(kindID, odd)
			}
		})
	case kindRaw:
		g.raw(3)
	case kindFiles:
		g.b = append(g.b, '{')
		for i := range g.r.IntN(3) {
			if i > 0 {
				g.b = append(g.b, ',')
			}
			g.str([]string{"x.go", "y.go", "ẋ.go"}[g.r.IntN(3)])
			g.b = append(g.b, ':')
			g.value(kindString, odd)
		}
		g.b = append(g.b, '}')
	case kindBlocks:
		g.array(g.r.IntN(4), func() { g.object(blockGenFields, odd) })
	case kindUsage:
		g.object(usageGenFields, odd)
	}
}

func (g *payloadGen) array(n int, elem func()) {
	g.b = append(g.b, '[')
	for i := range n {
		if i > 0 {
			g.space()
			g.b = append(g.b, ',')
		}
		g.space()
		elem()
	}
	g.space()
	g.b = append(g.b, ']')
}

// raw writes any JSON value, nested up to depth.
func (g *payloadGen) raw(depth int) {
	switch n := g.r.IntN(7); {
	case n == 0:
		g.b = append(g.b, []string{"null", "true", "false"}[g.r.IntN(3)]...)
	case n == 1:
		g.b = append(g.b, []string{"0", "-0", "12", "1.5", "1e3", "-2E-2", "123456789012345678901234"}[g.r.IntN(7)]...)
	case n == 2 || depth == 0:
		g.str(g.cut())
	case n <= 4:
		g.array(g.r.IntN(3), func() { g.raw(depth - 1) })
	default:
		g.b = append(g.b, '{')
		for i := range g.r.IntN(3) {
			if i > 0 {
				g.b = append(g.b, ',')
			}
			g.space()
			g.str(g.cut())
			g.space()
			g.b = append(g.b, ':')
			g.raw(depth - 1)
		}
		g.b = append(g.b, '}')
	}
}

// cut returns a random piece of the text.
func (g *payloadGen) cut() string {
	if len(g.text) == 0 {
		return ""
	}
	i := g.r.IntN(len(g.text))
	j := i + g.r.IntN(len(g.text)-i+1)
	return g.text[i:j]
}

// str writes s as a JSON string, escaping at random what may be escaped.
// Bytes that are not valid UTF-8 are written as they are (JSON readers
// replace them).
func (g *payloadGen) str(s string) {
	g.b = append(g.b, '"')
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			g.b = append(g.b, s[0])
		case r == '"' || r == '\\':
			g.b = append(g.b, '\\', byte(r))
		case r < 0x20 || g.chance(10):
			g.escape(r)
		default:
			g.b = append(g.b, s[:n]...)
		}
		s = s[n:]
	}
	g.b = append(g.b, '"')
}

// escape writes r as an escape sequence, a short one where there is one.
func (g *payloadGen) escape(r rune) {
	short := map[rune]byte{'\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't', '/': '/', '"': '"', '\\': '\\'}
	if c, ok := short[r]; ok && g.chance(2) {
		g.b = append(g.b, '\\', c)
		return
	}
	hex := "%04x"
	if g.chance(2) {
		hex = "%04X"
	}
	if r > 0xffff {
		r -= 0x10000
		g.b = fmt.Appendf(g.b, `\u`+hex+`\u`+hex, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		return
	}
	g.b = fmt.Appendf(g.b, `\u`+hex, r)
}

// genTexts seed the generators' text: prose, code, non-ASCII, surrogates
// written as text, invalid UTF-8.
var genTexts = []string{
	"",
	"hello, world",
	"line one\nline two\ttabbed \"quoted\" back\\slash /slash",
	"func main() {\n\tfmt.Println(\"é—✓ 😀\")\n}\n",
	"\x00\x01\x1f\x7f control",
	"bad \xff\xfe utf-8 \xe2\x82 cut \xed\xa0\x80 surrogate",
	strings.Repeat("lorem ipsum ", 30),
}

func FuzzGeneratedPayloads(f *testing.F) {
	for i, text := range genTexts {
		f.Add(uint64(i), text)
	}
	f.Fuzz(func(t *testing.T, seed uint64, text string) {
		g := &payloadGen{r: rand.New(rand.NewPCG(seed, 7)), text: text}
		for _, typ := range []Type{TypeUserPrompt, TypeAssistantMessage, TypeToolStarted, TypeFileSnapshot, TypeToolFinished} {
			for _, odd := range []bool{false, true} {
				checkPayload(t, g.payload(typ, odd))
			}
		}
	})
}

// TestGeneratedPayloads runs the generator over many seeds as a plain test,
// and checks that the fast path reads the payloads that are not odd.
func TestGeneratedPayloads(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 50
	}
	var fast, plain int
	for seed := range n {
		g := &payloadGen{r: rand.New(rand.NewPCG(uint64(seed), 7)), text: genTexts[seed%len(genTexts)]}
		for _, typ := range []Type{TypeUserPrompt, TypeAssistantMessage, TypeToolStarted, TypeFileSnapshot, TypeToolFinished} {
			checkPayload(t, g.payload(typ, true))
			data := g.payload(typ, false)
			checkPayload(t, data)
			plain++
			if fastFor(typ, data) {
				fast++
			}
		}
	}
	if fast != plain {
		t.Fatalf("the fast path read only %d of %d ordinary payloads", fast, plain)
	}
}

// fastFor reports whether the fast path reads data as a payload of type t.
func fastFor(t Type, data []byte) bool {
	switch t {
	case TypeUserPrompt:
		return scanPrompt(data, new(UserPrompt))
	case TypeAssistantMessage:
		return scanMessage(data, new(AssistantMessage), nil)
	case TypeToolStarted:
		return scanStarted(data, new(ToolStarted))
	case TypeFileSnapshot:
		return scanSnapshot(data, new(FileSnapshot))
	case TypeToolFinished:
		return scanFinished(data, new(ToolFinished), true)
	}
	return false
}
