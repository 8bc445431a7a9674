package session

// The decoders below read the payloads of the event types replay meets most
// (prompts, messages, tool intents, snapshots and receipts) with the scanner
// and keep only the fields replay uses; the fields they do not keep are still
// checked, so that an event decodes here exactly when it decodes with
// encoding/json. When the scanner gives up they decode the payload with
// encoding/json, so replay reads every log exactly as it did before.

// Field names of the payloads decoded here, as their JSON tags spell them.
var (
	promptFields   = []string{"text", "background"}
	messageFields  = []string{"blocks", "stop_reason", "usage", "model"}
	blockFields    = []string{"type", "text", "id", "name", "input", "tool_use_id", "is_error", "signature"}
	usageFields    = []string{"input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens"}
	startedFields  = []string{"call_id", "tool", "input", "paths", "approval", "sandbox"}
	snapshotFields = []string{"call_id", "path", "existed", "mode", "content", "digest"}
	finishedFields = []string{"call_id", "tool", "output", "is_error", "denied", "files", "untracked"}
)

// decodePrompt decodes a user_prompt payload whole. It reports whether the
// payload decodes.
func decodePrompt(e Event, p *UserPrompt) bool {
	return scanPrompt(e.Data, p) || fallback(e, p)
}

// scanPrompt is decodePrompt's fast path: it reports false where it gives up.
func scanPrompt(data []byte, p *UserPrompt) bool {
	s := scanner{b: data}
	var seen uint64
	ok := s.object(func(key []byte, flags int) bool {
		name, ok := s.field(key, flags, promptFields, &seen)
		switch {
		case !ok:
		case name == "text":
			p.Text, ok = s.string()
		case name == "background":
			p.Background, ok = s.bool()
		}
		return ok
	})
	return ok && s.end()
}

// decodeMessage decodes an assistant_message payload; StopReason and Model
// are left out. Tool inputs share the event's Data.
func decodeMessage(e Event, p *AssistantMessage, slab *blockSlab) bool {
	if scanMessage(e.Data, p, slab) {
		return true
	}
	if !fallback(e, p) {
		return false
	}
	p.StopReason, p.Model = "", ""
	return true
}

// scanMessage is decodeMessage's fast path.
func scanMessage(data []byte, p *AssistantMessage, slab *blockSlab) bool {
	s := scanner{b: data}
	var seen uint64
	ok := s.object(func(key []byte, flags int) bool {
		name, ok := s.field(key, flags, messageFields, &seen)
		switch {
		case !ok:
		case name == "blocks":
			p.Blocks, ok = s.blocks(slab)
		case name == "usage":
			p.Usage, ok = s.usage()
		case name != "":
			ok = s.skipString()
		}
		return ok
	})
	return ok && s.end()
}

// blocks reads an array of content blocks.
func (s *scanner) blocks(slab *blockSlab) ([]Block, bool) {
	out := slab.free()
	_, ok := s.array(func() bool {
		out = append(out, Block{})
		return s.block(&out[len(out)-1])
	})
	if ok {
		slab.take(out)
	}
	return out[:len(out):len(out)], ok
}

// blockSlab hands out the blocks of successive messages from shared arrays,
// so that a replay allocates them a few dozen at a time rather than one
// message at a time. The zero blockSlab is ready to use; a nil one allocates
// every message's blocks apart.
type blockSlab struct{ blocks []Block }

// free returns an empty, non-nil slice whose capacity is the slab's unused
// part (or a new array, when that is small).
func (b *blockSlab) free() []Block {
	if b == nil {
		return []Block{}
	}
	if cap(b.blocks)-len(b.blocks) < 4 {
		b.blocks = make([]Block, 0, min(max(2*cap(b.blocks), 16), 256))
	}
	return b.blocks[len(b.blocks):]
}

// take marks the blocks of out used if they were appended in the slab (a
// message with more blocks than the slab had room for got its own array).
func (b *blockSlab) take(out []Block) {
	if b == nil || len(out) == 0 {
		return
	}
	if rest := b.blocks[len(b.blocks):cap(b.blocks)]; len(rest) > 0 && &rest[0] == &out[0] {
		b.blocks = b.blocks[:len(b.blocks)+len(out)]
	}
}

// block reads one content block. Input is a capacity-limited slice of the
// scanned data, not a copy.
func (s *scanner) block(b *Block) bool {
	var seen uint64
	return s.object(func(key []byte, flags int) bool {
		name, ok := s.field(key, flags, blockFields, &seen)
		switch {
		case !ok:
		case name == "type":
			b.Type, ok = s.blockType()
		case name == "text":
			b.Text, ok = s.string()
		case name == "id":
			b.ID, ok = s.string()
		case name == "name":
			b.Name, ok = s.string()
		case name == "input":
			var raw []byte // null too is kept as it is, like encoding/json does
			raw, ok = s.skip()
			b.Input = raw[:len(raw):len(raw)]
		case name == "tool_use_id":
			b.ToolUseID, ok = s.string()
		case name == "is_error":
			b.IsError, ok = s.bool()
		case name == "signature":
			b.Signature, ok = s.string()
		}
		return ok
	})
}

// blockType reads a block's type, sharing the strings of the known types.
func (s *scanner) blockType() (string, bool) {
	raw, flags, ok := s.str()
	if !ok {
		return "", false
	}
	switch string(raw) {
	case BlockText:
		return BlockText, true
	case BlockToolUse:
		return BlockToolUse, true
	case BlockToolResult:
		return BlockToolResult, true
	}
	return unquoted(raw, flags), true
}

// usage reads token counts.
func (s *scanner) usage() (Usage, bool) {
	var u Usage
	var seen uint64
	ok := s.object(func(key []byte, flags int) bool {
		name, ok := s.field(key, flags, usageFields, &seen)
		switch {
		case !ok:
		case name == "input_tokens":
			u.InputTokens, ok = s.int64()
		case name == "output_tokens":
			u.OutputTokens, ok = s.int64()
		case name == "cache_write_tokens":
			u.CacheWriteTokens, ok = s.int64()
		case name == "cache_read_tokens":
			u.CacheReadTokens, ok = s.int64()
		}
		return ok
	})
	return u, ok
}

// decodeStarted decodes a tool_started payload; Input, Approval and
// Sandbox are left out.
func decodeStarted(e Event, p *ToolStarted) bool {
	if scanStarted(e.Data, p) {
		return true
	}
	if !fallback(e, p) {
		return false
	}
	p.Input, p.Approval, p.Sandbox = nil, "", ""
	return true
}

// scanStarted is decodeStarted's fast path.
func scanStarted(data []byte, p *ToolStarted) bool {
	s := scanner{b: data}
	var seen uint64
	ok := s.object(func(key []byte, flags int) bool {
		name, ok := s.field(key, flags, startedFields, &seen)
		switch {
		case !ok:
		case name == "call_id":
			p.CallID, ok = s.string()
		case name == "tool":
			p.Tool, ok = s.string()
		case name == "input":
			// A null input would decode as the raw value "null": fine too.
			_, ok = s.skip()
		case name == "paths":
			p.Paths, ok = s.strings()
		case name == "approval", name == "sandbox":
			ok = s.skipString()
		}
		return ok
	})
	return ok && s.end()
}

// decodeSnapshot decodes a file_snapshot payload for replay, which only
// needs Path: Content is checked to be base64 but not decoded, and the other
// fields are left out too.
func decodeSnapshot(e Event, p *FileSnapshot) bool {
	if scanSnapshot(e.Data, p) {
		return true
	}
	if !fallback(e, p) {
		return false
	}
	*p = FileSnapshot{Path: p.Path}
	return true
}

// scanSnapshot is decodeSnapshot's fast path.
func scanSnapshot(data []byte, p *FileSnapshot) bool {
	s := scanner{b: data}
	var seen uint64
	ok := s.object(func(key []byte, flags int) bool {
		name, ok := s.field(key, flags, snapshotFields, &seen)
		switch {
		case !ok:
		case name == "path":
			p.Path, ok = s.string()
		case name == "call_id", name == "digest":
			ok = s.skipString()
		case name == "existed":
			_, ok = s.bool()
		case name == "mode":
			_, ok = s.uint32()
		case name == "content":
			ok = s.base64()
		}
		return ok
	})
	return ok && s.end()
}

// decodeFinished decodes a tool_finished payload; Tool, Denied, Files and
// Untracked are left out, and so is Output unless output is set.
func decodeFinished(e Event, p *ToolFinished, output bool) bool {
	if scanFinished(e.Data, p, output) {
		return true
	}
	if !fallback(e, p) {
		return false
	}
	*p = ToolFinished{CallID: p.CallID, Output: p.Output, IsError: p.IsError}
	if !output {
		p.Output = ""
	}
	return true
}

// scanFinished is decodeFinished's fast path.
func scanFinished(data []byte, p *ToolFinished, output bool) bool {
	s := scanner{b: data}
	var seen uint64
	ok := s.object(func(key []byte, flags int) bool {
		name, ok := s.field(key, flags, finishedFields, &seen)
		switch {
		case !ok:
		case name == "call_id":
			p.CallID, ok = s.string()
		case name == "output" && output:
			p.Output, ok = s.string()
		case name == "output", name == "tool":
			ok = s.skipString()
		case name == "is_error":
			p.IsError, ok = s.bool()
		case name == "denied", name == "untracked":
			_, ok = s.bool()
		case name == "files":
			if s.peek() == 'n' {
				ok = s.literal("null")
				break
			}
			ok = s.object(func([]byte, int) bool { return s.skipString() })
		}
		return ok
	})
	return ok && s.end()
}

// fallback decodes e's payload into *p with encoding/json, from the zero
// value, when the scanner gave up. It decodes into a copy so that p itself
// stays on its caller's stack.
func fallback[T any](e Event, p *T) bool {
	v := new(T)
	if e.Decode(v) != nil {
		*p = *new(T)
		return false
	}
	*p = *v
	return true
}
