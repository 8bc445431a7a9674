package builtin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/lite-agent/lite-agent/tool"
)

// All returns the built-in file, shell and web tools with their default
// settings, in the order they are offered to the model. Tools that need
// session state (the todo list) are not here: the agent adds them.
func All() []tool.Tool {
	return []tool.Tool{Read{}, Write{}, Edit{}, Delete{}, Glob{}, Grep{}, LS{}, Bash{}, WebFetch{}}
}

// decode parses a tool's JSON input into v. Empty input and null count as
// {}; unknown fields are ignored (models add them), wrong types are not.
func decode(input json.RawMessage, v any) error {
	trimmed := bytes.TrimSpace(input)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		trimmed = []byte("{}")
	}
	if trimmed[0] != '{' {
		return errors.New("invalid input: expected a JSON object with the fields of the tool's input schema")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid input: %s; send one JSON object matching the tool's input schema", describeJSONError(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("invalid input: extra data after the JSON object; send exactly one object")
	}
	return nil
}

func describeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		typ := te.Type
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		want := typ.String()
		switch typ.Kind() {
		case reflect.String:
			want = "a string"
		case reflect.Bool:
			want = "true or false"
		case reflect.Int, reflect.Int64, reflect.Float64:
			want = "a number"
		}
		return fmt.Sprintf("field %q must be %s, not a JSON %s", te.Field, want, te.Value)
	}
	return err.Error()
}

// flexInt is an integer argument that also accepts a number in a string
// ("10") and an integral float (10.0): smaller models send both.
type flexInt int

// UnmarshalJSON implements json.Unmarshaler.
func (n *flexInt) UnmarshalJSON(b []byte) error {
	f, err := parseFlexNumber(b)
	if err != nil {
		return err
	}
	if f != math.Trunc(f) || math.Abs(f) > math.MaxInt32 {
		return fmt.Errorf("%s is not a whole number in range", b)
	}
	*n = flexInt(f)
	return nil
}

// flexFloat is a number argument that also accepts a number in a string.
type flexFloat float64

// UnmarshalJSON implements json.Unmarshaler.
func (n *flexFloat) UnmarshalJSON(b []byte) error {
	f, err := parseFlexNumber(b)
	if err != nil {
		return err
	}
	*n = flexFloat(f)
	return nil
}

func parseFlexNumber(b []byte) (float64, error) {
	s := string(bytes.TrimSpace(b))
	if s == "null" {
		return 0, nil
	}
	if len(s) >= 2 && s[0] == '"' {
		if err := json.Unmarshal([]byte(s), &s); err != nil {
			return 0, err
		}
		s = strings.TrimSpace(s)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%s is not a number", b)
	}
	return f, nil
}

// flexBool is a boolean argument that also accepts "true" and "false" in a
// string.
type flexBool bool

// UnmarshalJSON implements json.Unmarshaler.
func (v *flexBool) UnmarshalJSON(b []byte) error {
	switch strings.ToLower(strings.Trim(string(bytes.TrimSpace(b)), `"`)) {
	case "true":
		*v = true
	case "false", "null", "":
		*v = false
	default:
		return fmt.Errorf("%s is not true or false", b)
	}
	return nil
}

// locate checks a path from the model; the error is already worded for it.
func locate(root *tool.Root, p string) (tool.Loc, error) {
	if root == nil {
		return tool.Loc{}, errors.New("no workdir is set for this call")
	}
	return root.Locate(p)
}

// onePath is Mutator.Paths for the tools that change the one file their
// input names: that path, checked against root, or the input's error.
func onePath(root *tool.Root, p string, inputErr error) ([]string, error) {
	if inputErr != nil {
		return nil, inputErr
	}
	loc, err := locate(root, p)
	if err != nil {
		return nil, err
	}
	return []string{loc.Path}, nil
}

// displayJoin joins a path reported by Locate with a slash-separated path
// below it.
func displayJoin(base, rel string) string {
	if rel == "." || rel == "" {
		return base
	}
	if filepath.IsAbs(base) {
		return filepath.Join(base, filepath.FromSlash(rel))
	}
	return path.Join(base, rel)
}

// humanSize formats a byte count compactly: 512, 1.5K, 20M.
func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10)
	}
	f := float64(n)
	for _, suffix := range []string{"K", "M", "G", "T"} {
		f /= unit
		if f < unit || suffix == "T" {
			if f < 10 {
				return strconv.FormatFloat(f, 'f', 1, 64) + suffix
			}
			return strconv.FormatFloat(f, 'f', 0, 64) + suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// plural returns "1 line" or "3 lines" (also "entries", "matches").
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	switch {
	case strings.HasSuffix(word, "y"):
		word = word[:len(word)-1] + "ies"
	case strings.HasSuffix(word, "ch"), strings.HasSuffix(word, "s"), strings.HasSuffix(word, "x"):
		word += "es"
	default:
		word += "s"
	}
	return strconv.Itoa(n) + " " + word
}
