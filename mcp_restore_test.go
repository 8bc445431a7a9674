package liteagent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/internal/mcptest"
	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/session"
)

// mcpFSFixture runs one prompt whose model calls tools of npm's
// server-filesystem (as mcp__fs__*), allowed the workdir, over the files
// pre, and returns the fixture with the tree before the prompt.
func mcpFSFixture(t *testing.T, pre map[string]file, calls func(dir string) []fakemodel.ToolCall) *rewindFixture {
	t.Helper()
	bin := mcptest.NPMServer(t, "mcp-server-filesystem")
	f := &rewindFixture{store: memory.New(), dir: t.TempDir()}
	for p, fl := range pre {
		if err := os.WriteFile(filepath.Join(f.dir, p), []byte(fl.content), fl.mode); err != nil {
			t.Fatal(err)
		}
	}
	var replies []fakemodel.Reply
	for _, c := range calls(f.dir) {
		replies = append(replies, fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{c}})
	}
	srv, p := startModel(t, "anthropic", append(replies, fakemodel.Reply{Text: "done"})...)
	f.agent = newAgent(t, p, liteagent.Options{Checkpointer: f.store, Workdir: f.dir,
		MCPServers: []mcp.ServerConfig{{Name: "fs", Command: bin, Args: []string{f.dir}}}})
	set, err := f.agent.MCP(t.Context())
	if err != nil || set.Servers()[0].State != mcp.StateReady {
		t.Fatalf("server-filesystem did not start: %v %+v", err, set.Servers())
	}
	f.before = append(f.before, tree(t, f.dir))
	if _, err := f.agent.Send(t.Context(), "prompt A"); err != nil {
		t.Fatal(err)
	}
	checkServer(t, srv)
	return f
}

// writeFile is a call of server-filesystem's write_file.
func writeFile(id, dir, name, content string) fakemodel.ToolCall {
	return call(id, "mcp__fs__write_file", map[string]any{"path": filepath.Join(dir, name), "content": content})
}

// A write by an MCP tool not marked read-only is bracketed by manifests
// like a shell command: the preview lists it, the restore undoes it (a
// changed file back, a created one gone), and the undo fork redoes it. A
// tool marked readOnlyHint is not bracketed.
func TestRestoreUndoesMCPWrites(t *testing.T) {
	f := mcpFSFixture(t, map[string]file{"notes.txt": {"buy milk\n", 0o644}}, func(dir string) []fakemodel.ToolCall {
		return []fakemodel.ToolCall{
			call("c1", "mcp__fs__read_text_file", map[string]any{"path": filepath.Join(dir, "notes.txt")}),
			writeFile("c2", dir, "notes.txt", "buy bread\n"),
			writeFile("c3", dir, "new.txt", "made over MCP\n"),
		}
	})
	ctx := context.Background()
	id := f.agent.SessionID()
	end := tree(t, f.dir)
	if end["notes.txt"].content != "buy bread\n" || end["new.txt"].content != "made over MCP\n" {
		t.Fatalf("the MCP calls did not write as scripted: %v", end)
	}
	events, err := checkpoint.ReadAll(ctx, f.store, id)
	if err != nil {
		t.Fatal(err)
	}
	scanned := map[string]bool{}
	recorded := map[string]string{}
	for _, e := range events {
		switch e.Type {
		case session.TypeWorkspaceScanned:
			var ws session.WorkspaceScanned
			if err := e.Decode(&ws); err != nil {
				t.Fatal(err)
			}
			scanned[ws.CallID] = true
		case session.TypeWorkspaceChanged:
			var rec session.WorkspaceChanged
			if err := e.Decode(&rec); err != nil {
				t.Fatal(err)
			}
			recorded[rec.CallID] = rec.Tool
		}
	}
	if scanned["c1"] || !scanned["c2"] || !scanned["c3"] {
		t.Errorf("calls bracketed %v, want c2 and c3 (write_file), not c1 (read_text_file, read-only)", scanned)
	}
	if recorded["c2"] != "mcp__fs__write_file" || recorded["c3"] != "mcp__fs__write_file" {
		t.Errorf("workspace_changed records (call → tool) %v, want c2 and c3 naming mcp__fs__write_file", recorded)
	}
	cps := f.checkpoints(t)
	preview, err := f.agent.Restore(ctx, id, cps[0], &liteagent.RestoreOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, c := range preview.Files {
		files = append(files, c.Action+" "+c.Path)
	}
	if want := []string{"remove new.txt", "restore notes.txt"}; !slices.Equal(files, want) {
		t.Errorf("preview files %v, want %v", files, want)
	}
	// The writes are tracked; only what the server may have done outside
	// the workdir is listed.
	if want := []string{"mcp__fs__write_file c2 (its changes in the workdir are undone; what it did elsewhere is not)", "mcp__fs__write_file c3 (its changes in the workdir are undone; what it did elsewhere is not)"}; !slices.Equal(preview.NotUndone, want) {
		t.Errorf("preview lists as not undone %q, want %q", preview.NotUndone, want)
	}
	res, err := f.agent.Restore(ctx, id, cps[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, "tree after restoring to before the MCP writes", tree(t, f.dir), f.before[0])
	if _, err := f.agent.Restore(ctx, res.UndoSession, res.UndoSeq, nil); err != nil {
		t.Fatalf("undo the restore: %v", err)
	}
	sameTree(t, "tree after undoing the restore", tree(t, f.dir), end)
}

// A file an MCP tool wrote and someone else edited since stops the
// restore, which writes nothing, unless forced.
func TestRestoreRefusesDriftAfterMCPWrite(t *testing.T) {
	f := mcpFSFixture(t, map[string]file{"notes.txt": {"buy milk\n", 0o644}}, func(dir string) []fakemodel.ToolCall {
		return []fakemodel.ToolCall{writeFile("c1", dir, "notes.txt", "buy bread\n")}
	})
	ctx := context.Background()
	id := f.agent.SessionID()
	if err := os.WriteFile(filepath.Join(f.dir, "notes.txt"), []byte("a human's edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := tree(t, f.dir)
	cps := f.checkpoints(t)
	_, err := f.agent.Restore(ctx, id, cps[0], nil)
	var de *liteagent.DriftError
	if !errors.As(err, &de) || !slices.Equal(de.Files, []string{"notes.txt"}) {
		t.Fatalf("Restore = %v, want a drift error naming notes.txt", err)
	}
	sameTree(t, "a refused restore writes nothing", tree(t, f.dir), before)
	if _, err := f.agent.Restore(ctx, id, cps[0], &liteagent.RestoreOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "forced restore", tree(t, f.dir), f.before[0])
}

// What an MCP call changed that a restore cannot undo (a file over the
// size cap) is listed under the call's tool, not as bash.
func TestMCPChangeNotUndoneNamesTheTool(t *testing.T) {
	big := strings.Repeat("x", 10<<20+1)
	f := mcpFSFixture(t, map[string]file{"big.txt": {big, 0o644}}, func(dir string) []fakemodel.ToolCall {
		return []fakemodel.ToolCall{writeFile("c3", dir, "big.txt", "small now\n")}
	})
	cps := f.checkpoints(t)
	res, err := f.agent.Restore(context.Background(), f.agent.SessionID(), cps[0], &liteagent.RestoreOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.NotUndone) != 2 || !strings.HasPrefix(res.NotUndone[0], "mcp__fs__write_file c3: big.txt (over the size limit") ||
		res.NotUndone[1] != "mcp__fs__write_file c3 (its changes in the workdir are undone; what it did elsewhere is not)" {
		t.Errorf("not undone %q, want big.txt under mcp__fs__write_file c3, then the call's note", res.NotUndone)
	}
}
