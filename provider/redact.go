package provider

import "strings"

// MinSecretLen is the shortest secret Redact looks for. A shorter one (a
// placeholder key such as "x" for a local server) would match inside
// ordinary words ("une[redacted]pected EOF"), and hiding it protects
// nothing: it is left alone.
const MinSecretLen = 8

// Redact replaces every occurrence of secret in s with "[redacted]". A
// secret shorter than MinSecretLen is not searched for.
func Redact(s, secret string) string {
	if len(secret) < MinSecretLen {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}

// RedactedError is an error whose message never shows Secret (see
// Redact); errors.Is and errors.As see through it to Err.
type RedactedError struct {
	Err    error
	Secret string
}

// Error implements error.
func (e *RedactedError) Error() string { return Redact(e.Err.Error(), e.Secret) }

// Unwrap returns Err.
func (e *RedactedError) Unwrap() error { return e.Err }
