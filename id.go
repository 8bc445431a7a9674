package liteagent

import (
	"crypto/rand"
	"encoding/binary"
	"time"
)

// crockford is Crockford's base32 alphabet in lower case: no i, l, o, u.
const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// NewSessionID returns a new session id: 26 characters, sortable by creation
// time (48 bits of milliseconds, then 80 random bits), safe in file names.
func NewSessionID() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixMilli())<<16)
	rand.Read(b[6:])
	hi := binary.BigEndian.Uint64(b[:8])
	lo := binary.BigEndian.Uint64(b[8:])
	out := make([]byte, 26)
	// 128 bits as 26 base32 digits, most significant first.
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out)
}
