package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDoctorFindsStrayTempFiles: a write a crash cut off left its
// temporary file beside its target (planted here, with a log whose write
// call never finished). --doctor names it (exit 1) and leaves it,
// --doctor --repair removes it and nothing else, and --doctor is clean.
func TestDoctorFindsStrayTempFiles(t *testing.T) {
	work, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Now().UTC().Format(time.RFC3339Nano)
	lines := []string{
		fmt.Sprintf(`{"v":1,"seq":1,"type":"session_started","time":%q,"data":{"id":"s1","namespace":%q,"workdir":%q}}`, ts, work, work),
		fmt.Sprintf(`{"v":1,"seq":2,"type":"user_prompt","time":%q,"data":{"text":"write it"}}`, ts),
		fmt.Sprintf(`{"v":1,"seq":3,"type":"assistant_message","time":%q,"data":{"blocks":[{"type":"tool_use","id":"c1","name":"write","input":{"path":"sub/a.txt","content":"x"}}]}}`, ts),
		fmt.Sprintf(`{"v":1,"seq":4,"type":"tool_started","time":%q,"data":{"call_id":"c1","tool":"write","paths":["sub/a.txt"]}}`, ts),
	}
	in := filepath.Join(t.TempDir(), "s1.jsonl")
	var stream string
	for _, l := range lines {
		stream += l + "\n"
	}
	if err := os.WriteFile(in, []byte(stream), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "s.db")
	if code, _, errs := run(t, nil, work, "--session-db", db, "--import", in); code != 0 {
		t.Fatalf("--import: %d %s", code, errs)
	}
	stray := filepath.Join(work, "sub", ".a.txt.lite-agent-abcdefgh27.tmp")
	user := filepath.Join(work, "sub", ".a.txt.lite-agent-mine.tmp")
	for _, p := range []string{stray, user} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("half a file"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	probs, code := runDoctor(t, work, db)
	if code != 1 || len(probs) != 1 || probs[0].Problem != "stray_temp_file" || probs[0].Session != "s1" || probs[0].Repaired {
		t.Fatalf("--doctor with a stray temporary file: exit %d, %+v", code, probs)
	}
	if _, err := os.Stat(stray); err != nil {
		t.Fatalf("--doctor without --repair removed the stray: %v", err)
	}
	if probs, code := runDoctor(t, work, db, "--repair"); code != 0 || len(probs) != 1 || !probs[0].Repaired {
		t.Fatalf("--doctor --repair: exit %d, %+v", code, probs)
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("the stray is still there after --repair (%v)", err)
	}
	if _, err := os.Stat(user); err != nil {
		t.Fatalf("--repair removed a file of the user's: %v", err)
	}
	if probs, code := runDoctor(t, work, db); code != 0 || len(probs) != 0 {
		t.Fatalf("--doctor after the repair: exit %d, %+v", code, probs)
	}
}
