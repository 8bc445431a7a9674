package session

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner reads the JSON payloads replay decodes on every event, accepting
// exactly what encoding/json accepts for them and nothing it would read
// differently. Every method that returns false means "not valid, or not a
// shape this scanner reads": the caller then decodes the payload with
// encoding/json, which decides (and fails) exactly as it always did. So the
// scanner may give up on anything unusual (null members, escaped or
// differently cased keys, repeated keys, numbers that need conversion), but
// must never accept something encoding/json would reject or read otherwise.
type scanner struct {
	b     []byte
	i     int
	depth int
}

// maxScanDepth bounds the nesting the scanner follows; deeper values are left
// to encoding/json (whose own limit is much higher).
const maxScanDepth = 64

// String flags returned by str.
const (
	strEscaped  = 1 << iota // the raw string has backslash escapes
	strNonASCII             // the raw string has bytes ≥ 0x80
)

// Word-at-a-time constants: every byte 0x01, every byte 0x80.
const (
	lsbs = 0x0101010101010101
	msbs = 0x8080808080808080
)

// plain checks that b, the raw bytes of a string, has no control
// characters, and reports whether it has bytes ≥ 0x80. It reads 32 bytes at
// a time while they are all printable ASCII.
func plain(b []byte) (nonASCII, ok bool) {
	const space = lsbs * 0x20
	// (Slicing b as it goes lets the compiler drop the bounds checks.)
	for len(b) >= 32 {
		x0 := binary.LittleEndian.Uint64(b[0:8])
		x1 := binary.LittleEndian.Uint64(b[8:16])
		x2 := binary.LittleEndian.Uint64(b[16:24])
		x3 := binary.LittleEndian.Uint64(b[24:32])
		// A byte below 0x20 borrows into its high bit; a byte ≥ 0x80 has it.
		if ((x0-space)|x0|(x1-space)|x1|(x2-space)|x2|(x3-space)|x3)&msbs != 0 {
			break
		}
		b = b[32:]
	}
	var seen uint64
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b[:8])
		if (x-space)&^x&msbs != 0 {
			return false, false
		}
		seen |= x
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 {
			return false, false
		}
		seen |= uint64(c)
	}
	return seen&msbs != 0, true
}

// ws skips white space as JSON defines it.
func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek skips white space and returns the next byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// end reports whether only white space is left.
func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// str reads the string at the current position (after white space) and
// returns its raw bytes between the quotes, which it has checked are valid
// JSON (no control characters, only valid escapes). Invalid UTF-8 is valid
// JSON: encoding/json replaces it when it unquotes, and so does unquote.
func (s *scanner) str() (raw []byte, flags int, ok bool) {
	if s.peek() != '"' {
		return nil, 0, false
	}
	b := s.b
	start := s.i + 1
	if end := shortEnd(b, start); end >= 0 {
		s.i = end + 1
		return b[start:end], 0, true
	}
	// Up to the first escape, the string is checked a fast way: find the
	// first quote and the first backslash before it, and check what lies
	// before either in bulk.
	end := bytes.IndexByte(b[start:], '"') + start
	if end < start {
		return nil, 0, false
	}
	i := bytes.IndexByte(b[start:end], '\\') + start
	if i < start {
		i = end
	}
	nonASCII, ok := plain(b[start:i])
	if !ok {
		return nil, 0, false
	}
	// From there, stop at each quote, backslash and control character.
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			if nonASCII {
				flags |= strNonASCII
			}
			s.i = i + 1
			return b[start:i], flags, true
		case c == '\\':
			n := escapeLen(b[i:])
			if n == 0 {
				return nil, 0, false
			}
			flags |= strEscaped
			i += n
		default:
			return nil, 0, false // a control character
		}
		var high bool
		i, high = stop(b, i)
		nonASCII = nonASCII || high
	}
	return nil, 0, false
}

// shortEnd returns the index of the quote that ends the string starting at
// start when the string is short (under 16 bytes) and plain (printable ASCII
// without escapes), as keys, ids and names are; otherwise -1.
func shortEnd(b []byte, start int) int {
	for i := start; i < start+16 && i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if m := stopBytes(x) | x&msbs; m != 0 {
			if j := i + bits.TrailingZeros64(m)/8; b[j] == '"' {
				return j
			}
			return -1
		}
	}
	return -1
}

// stop returns the index of the first quote, backslash or control character
// of b at or after i (len(b) if there is none), and whether the bytes before
// it include some ≥ 0x80.
func stop(b []byte, i int) (int, bool) {
	var seen uint64
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if m := stopBytes(x); m != 0 {
			k := bits.TrailingZeros64(m) - 7 // the stop byte's first bit
			seen |= x & (1<<k - 1)
			return i + k/8, seen&msbs != 0
		}
		seen |= x
	}
	for ; i < len(b); i++ {
		c := b[i]
		if c == '"' || c == '\\' || c < 0x20 {
			break
		}
		seen |= uint64(c)
	}
	return i, seen&msbs != 0
}

// stopBytes returns a word whose high bit is set in (at least) the lowest byte
// of x that is a quote, a backslash or a control character, and is zero if x
// has none. (Borrows can only set bits above that byte.)
func stopBytes(x uint64) uint64 {
	q := x ^ (lsbs * '"')
	bs := x ^ (lsbs * '\\')
	return (((q - lsbs) &^ q) | ((bs - lsbs) &^ bs) | ((x - lsbs*0x20) &^ x)) & msbs
}

// base64 reads a string that must be standard, padded base64 with no
// escapes, without decoding it.
func (s *scanner) base64() bool {
	if s.peek() != '"' {
		return false
	}
	start := s.i + 1
	end := bytes.IndexByte(s.b[start:], '"') + start
	if end < start || !base64Valid(s.b[start:end]) {
		return false // escapes, or not base64: encoding/json decides
	}
	s.i = end + 1
	return true
}

// escapeLen returns the length of the valid escape sequence b starts with,
// or 0 if it is not one.
func escapeLen(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if len(b) >= 6 && hex4(b[2:6]) >= 0 {
			return 6
		}
	}
	return 0
}

// hex4 decodes four hex digits, or returns -1.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// string reads a string value and returns it unquoted. It checks and
// unescapes in one pass; only a string with bytes that are not valid UTF-8
// is done again, by unquote.
func (s *scanner) string() (string, bool) {
	if s.peek() != '"' {
		return "", false
	}
	b := s.b
	start := s.i + 1
	if end := shortEnd(b, start); end >= 0 {
		s.i = end + 1
		return string(b[start:end]), true
	}
	end := bytes.IndexByte(b[start:], '"') + start
	if end < start {
		return "", false
	}
	k := bytes.IndexByte(b[start:end], '\\') + start
	if k < start { // no escapes: the usual case
		raw := b[start:end]
		nonASCII, ok := plain(raw)
		if !ok {
			return "", false
		}
		s.i = end + 1
		if nonASCII && !utf8.Valid(raw) {
			return unquote(raw, true), true
		}
		return string(raw), true
	}
	nonASCII, ok := plain(b[start:k])
	if !ok {
		return "", false
	}
	var sb strings.Builder
	sb.Grow(closingQuote(b, end, start) - start)
	sb.Write(b[start:k])
	for i := k; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			s.i = i + 1
			// Escapes are ASCII, so the raw string is valid UTF-8 exactly
			// when every piece written between them is.
			if raw := b[start:i]; nonASCII && !utf8.Valid(raw) {
				return unquote(raw, true), true
			}
			return sb.String(), true
		case c == '\\':
			if escapeLen(b[i:]) == 0 {
				return "", false
			}
			i += writeEscape(&sb, b[i:])
		default:
			return "", false // a control character
		}
		j, high := stop(b, i)
		nonASCII = nonASCII || high
		sb.Write(b[i:j])
		i = j
	}
	return "", false
}

// closingQuote returns the index of the quote that closes the string
// starting at start, if it is valid, given the index of its first quote: a
// quote after an odd number of backslashes is escaped. It returns len(b) if
// there is none; it is only a size hint.
func closingQuote(b []byte, quote, start int) int {
	for quote >= 0 {
		j := quote
		for j > start && b[j-1] == '\\' {
			j--
		}
		if (quote-j)%2 == 0 {
			return quote
		}
		next := bytes.IndexByte(b[quote+1:], '"')
		if next < 0 {
			break
		}
		quote += 1 + next
	}
	return len(b)
}

// unquoted returns the string whose raw bytes and flags str returned.
func unquoted(raw []byte, flags int) string {
	if flags == 0 || flags == strNonASCII && utf8.Valid(raw) {
		return string(raw)
	}
	return unquote(raw, flags&strNonASCII != 0)
}

// skipString reads a string value it has no use for.
func (s *scanner) skipString() bool {
	_, _, ok := s.str()
	return ok
}

// unquote unescapes the raw bytes of a string that str has checked, the way
// encoding/json does: escapes are decoded, a \u escape of half a surrogate
// pair that is not followed by the other half becomes U+FFFD, and so does
// every byte that is not part of valid UTF-8 (there are none of those
// unless nonASCII).
func unquote(raw []byte, nonASCII bool) string {
	var sb strings.Builder
	sb.Grow(len(raw))
	for len(raw) > 0 {
		j := bytes.IndexByte(raw, '\\')
		if j < 0 {
			j = len(raw)
		}
		if nonASCII {
			writeUTF8(&sb, raw[:j])
		} else {
			sb.Write(raw[:j])
		}
		raw = raw[j:]
		if len(raw) > 0 {
			raw = raw[writeEscape(&sb, raw):]
		}
	}
	return sb.String()
}

// writeEscape writes what the valid escape sequence b starts with stands
// for, and returns its length: a \u escape of the first half of a surrogate
// pair takes the second half with it when it follows, and stands for U+FFFD
// otherwise (as a second half alone does).
func writeEscape(sb *strings.Builder, b []byte) int {
	if b[1] != 'u' {
		sb.WriteByte(unescapeByte(b[1]))
		return 2
	}
	r := hex4(b[2:6])
	if !utf16.IsSurrogate(r) {
		sb.WriteRune(r)
		return 6
	}
	r2 := rune(-1)
	if len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
		r2 = hex4(b[8:12])
	}
	if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
		sb.WriteRune(pair)
		return 12
	}
	sb.WriteRune(utf8.RuneError)
	return 6
}

// unescapeByte returns the byte a one-letter escape stands for.
func unescapeByte(c byte) byte {
	switch c {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return c // '"', '\\' and '/' stand for themselves
}

// writeUTF8 writes b, replacing each byte that is not part of valid UTF-8
// with U+FFFD.
func writeUTF8(sb *strings.Builder, b []byte) {
	if utf8.Valid(b) {
		sb.Write(b)
		return
	}
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.Write(b[:n])
		}
		b = b[n:]
	}
}

// number reads a number and returns its text.
func (s *scanner) number() ([]byte, bool) {
	s.ws()
	b, start := s.b, s.i
	i := start
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return nil, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return nil, false
		}
		i = j
	}
	s.i = i
	return b[start:i], true
}

// digits returns the index of the first non-digit of b at or after i.
func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// int64 reads a number into an int64 field. Numbers encoding/json would
// refuse (fractions, exponents) or that might overflow are left to it.
func (s *scanner) int64() (int64, bool) {
	num, ok := s.number()
	if !ok {
		return 0, false
	}
	neg := num[0] == '-'
	if neg {
		num = num[1:]
	}
	if len(num) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range num {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// uint32 reads a number into a uint32 field, as int64 does.
func (s *scanner) uint32() (uint32, bool) {
	num, ok := s.number()
	if !ok || len(num) > 9 {
		return 0, false
	}
	var n uint32
	for _, c := range num {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint32(c-'0')
	}
	return n, true
}

// bool reads true or false.
func (s *scanner) bool() (v, ok bool) {
	switch s.peek() {
	case 't':
		return true, s.literal("true")
	case 'f':
		return false, s.literal("false")
	}
	return false, false
}

// literal reads the literal lit.
func (s *scanner) literal(lit string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return false
	}
	s.i += len(lit)
	return true
}

// skip reads any value, checking it is valid JSON, and returns its text.
func (s *scanner) skip() ([]byte, bool) {
	c := s.peek()
	start := s.i
	var ok bool
	switch c {
	case '"':
		ok = s.skipString()
	case '{':
		ok = s.object(func([]byte, int) bool {
			_, ok := s.skip()
			return ok
		})
	case '[':
		_, ok = s.array(func() bool {
			_, ok := s.skip()
			return ok
		})
	case 't':
		ok = s.literal("true")
	case 'f':
		ok = s.literal("false")
	case 'n':
		ok = s.literal("null")
	default:
		_, ok = s.number()
	}
	return s.b[start:s.i], ok
}

// object reads an object, calling member for each member with the raw key
// and its string flags, the scanner placed at the value; member must read
// the value.
func (s *scanner) object(member func(key []byte, flags int) bool) bool {
	if s.peek() != '{' || s.depth >= maxScanDepth {
		return false
	}
	s.i++
	s.depth++
	if s.peek() == '}' {
		s.i++
		s.depth--
		return true
	}
	for {
		key, flags, ok := s.str()
		if !ok || s.peek() != ':' {
			return false
		}
		s.i++
		if !member(key, flags) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			s.depth--
			return true
		default:
			return false
		}
	}
}

// array reads an array, calling elem for each element with the scanner
// placed at it; elem must read it. It returns the number of elements.
func (s *scanner) array(elem func() bool) (int, bool) {
	if s.peek() != '[' || s.depth >= maxScanDepth {
		return 0, false
	}
	s.i++
	s.depth++
	if s.peek() == ']' {
		s.i++
		s.depth--
		return 0, true
	}
	for n := 1; ; n++ {
		if !elem() {
			return 0, false
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			s.depth--
			return n, true
		default:
			return 0, false
		}
	}
}

// strings reads an array of strings. An empty array gives an empty, non-nil
// slice, as encoding/json does.
func (s *scanner) strings() ([]string, bool) {
	out := []string{}
	_, ok := s.array(func() bool {
		v, ok := s.string()
		out = append(out, v)
		return ok
	})
	return out, ok
}

// field looks a member's key up among a struct's field names and returns
// the name it matches exactly; for a key that matches none it reads the value
// (which encoding/json ignores) and returns "". It gives up on keys that
// encoding/json might match to a field differently (escaped, non-ASCII or
// differently cased keys) and on a field given twice (seen records the
// fields given so far).
func (s *scanner) field(key []byte, flags int, names []string, seen *uint64) (string, bool) {
	if flags != 0 {
		return "", false
	}
	for i, name := range names {
		if string(key) == name {
			if *seen&(1<<i) != 0 {
				return "", false
			}
			*seen |= 1 << i
			return name, true
		}
	}
	for _, name := range names {
		if asciiEqualFold(key, name) {
			return "", false
		}
	}
	_, ok := s.skip()
	return "", ok
}

// asciiEqualFold reports whether the ASCII key equals name ignoring case.
func asciiEqualFold(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i := range len(key) {
		a, b := key[i], name[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

// base64Valid reports whether the raw string (with no escapes) certainly
// decodes as standard, padded base64, the encoding encoding/json uses for
// []byte. Some valid forms (line breaks, escapes) are left to encoding/json.
func base64Valid(raw []byte) bool {
	if len(raw)%4 != 0 {
		return false
	}
	if len(raw) == 0 {
		return true
	}
	body, last := raw[:len(raw)-4], raw[len(raw)-4:]
	for len(body) >= 16 {
		if base64Bytes(binary.LittleEndian.Uint64(body[:8]))&base64Bytes(binary.LittleEndian.Uint64(body[8:16])) != msbs {
			return false
		}
		body = body[16:]
	}
	for _, c := range body {
		if base64Class[c] != 0 {
			return false
		}
	}
	if base64Class[last[0]]|base64Class[last[1]] != 0 {
		return false
	}
	switch {
	case last[2] == '=':
		return last[3] == '='
	case last[3] == '=':
		return base64Class[last[2]] == 0
	}
	return base64Class[last[2]]|base64Class[last[3]] == 0
}

// base64Bytes returns a word with the high bit set in each byte of x that
// is in the standard base64 alphabet (A-Z, a-z, 0-9, + and /), by range
// checks on the low 7 bits of every byte at once, which cannot carry from
// one byte to the next.
func base64Bytes(x uint64) uint64 {
	t := x &^ msbs
	l := t | lsbs*0x20 // A-Z folded onto a-z
	letter := (l + lsbs*(0x80-'a')) &^ (l + lsbs*(0x7f-'z'))
	digit := (t + lsbs*(0x80-'0')) &^ (t + lsbs*(0x7f-'9'))
	sign := ^((t | lsbs*0x04) ^ lsbs*'/' + lsbs*0x7f) // '+' or '/': (t|4)^'/' is 0
	return (letter | digit | sign) &^ x & msbs
}

// base64Class is 0 for the bytes of the standard base64 alphabet, 1 for
// every other byte.
var base64Class = func() (t [256]byte) {
	for i := range t {
		t[i] = 1
	}
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") {
		t[c] = 0
	}
	return t
}()
