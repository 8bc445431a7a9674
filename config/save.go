package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// SaveRule adds pattern to the list ("allow", "ask" or "deny") of the
// [permissions] table in the file at path, creating the file (and its
// .lite-agent directory) if needed. It edits the text in place, so the
// file's comments and layout stay, and checks that the result still
// parses and holds the rule before it replaces the file (a temp file
// renamed over it). A rule already present is not added twice.
func SaveRule(path, list, pattern string) error {
	switch list {
	case "allow", "ask", "deny":
	default:
		return fmt.Errorf("save rule: the list is allow, ask or deny, not %q", list)
	}
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("save rule: %w", err)
	}
	if len(data) > 0 {
		f, err := Parse(path, data)
		if err != nil {
			return fmt.Errorf("save rule: fix the file first: %w", err)
		}
		if hasRule(f, list, pattern) {
			return nil
		}
	}
	out := addRule(string(data), list, pattern)
	f, err := Parse(path, []byte(out))
	if err != nil || !hasRule(f, list, pattern) {
		return fmt.Errorf("save rule: could not add %s to %s's [permissions] %s list by hand; add it yourself", strconv.Quote(pattern), path, list)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("save rule: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.toml")
	if err != nil {
		return fmt.Errorf("save rule: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(out); err != nil {
		tmp.Close()
		return fmt.Errorf("save rule: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("save rule: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save rule: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("save rule: %w", err)
	}
	return nil
}

func hasRule(f *File, list, pattern string) bool {
	rules := map[string][]Rule{"allow": f.Permissions.Allow, "ask": f.Permissions.Ask, "deny": f.Permissions.Deny}[list]
	for _, r := range rules {
		if r.Pattern == pattern {
			return true
		}
	}
	return false
}

// addRule inserts the rule into text: into an existing "list = [" line of
// the [permissions] table, else as a new line under its header, else as a
// new table at the end.
func addRule(text, list, pattern string) string {
	q := strconv.Quote(pattern)
	lines := strings.Split(text, "\n")
	header := -1
	for i, raw := range lines {
		l := strings.TrimSpace(raw)
		if strings.HasPrefix(l, "[") {
			if header >= 0 {
				break
			}
			if strings.ReplaceAll(strings.Trim(l, "[]"), " ", "") == "permissions" {
				header = i
			}
			continue
		}
		if header < 0 {
			continue
		}
		name, val, ok := strings.Cut(l, "=")
		if ok && strings.TrimSpace(name) == list {
			if j := strings.Index(raw, "["); j >= 0 && strings.HasPrefix(strings.TrimSpace(val), "[") {
				sep := ", "
				if strings.HasPrefix(strings.TrimSpace(raw[j+1:]), "]") || strings.TrimSpace(raw[j+1:]) == "" {
					sep = ""
					if strings.TrimSpace(raw[j+1:]) == "" {
						sep = ","
					}
				}
				lines[i] = raw[:j+1] + q + sep + raw[j+1:]
				return strings.Join(lines, "\n")
			}
		}
	}
	if header >= 0 {
		lines = append(lines[:header+1], append([]string{list + " = [" + q + "]"}, lines[header+1:]...)...)
		return strings.Join(lines, "\n")
	}
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return text + "\n[permissions]\n" + list + " = [" + q + "]\n"
}
