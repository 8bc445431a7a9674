package session

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The oracle is replay as it was before payloads were scanned: every payload
// decoded whole with encoding/json, once for the summary and once for the
// state. Replay must give exactly what it gives, for any log.

// oracleApply is the former State.Apply.
func oracleApply(s *State, e Event) {
	s.cur = e.Seq
	oracleSummary(&s.Summary, e)
	if e.Type == TypeProjectContext {
		s.contextSeq = e.Seq
	}
	switch e.Type {
	case TypeUserPrompt:
		var p UserPrompt
		if e.Decode(&p) != nil {
			return
		}
		s.closeUnanswered(NotRun)
		if !p.Background {
			clear(s.snapped)
			seq := e.Seq - 1
			if seq > 0 && seq == s.contextSeq {
				seq = s.contextSeq - 1 // the prompt's project context comes before it
			}
			s.checkpoints = append(s.checkpoints, Checkpoint{Seq: seq, Prompt: p.Text, Time: e.Time, PromptSeq: e.Seq})
		}
		s.add(RoleUser, Block{Type: BlockText, Text: p.Text})
	case TypeAssistantMessage:
		var p AssistantMessage
		if e.Decode(&p) != nil {
			return
		}
		s.closeUnanswered(NotRun)
		s.Usage = s.Usage.Add(p.Usage)
		s.lastUsage = p.Usage
		s.push(Message{Role: RoleAssistant, Blocks: p.Blocks})
		for _, b := range p.Blocks {
			if b.Type == BlockToolUse {
				s.unanswered = append(s.unanswered, b.ID)
			}
		}
	case TypeToolStarted:
		var p ToolStarted
		if e.Decode(&p) != nil {
			return
		}
		if s.started == nil {
			s.started = map[string]bool{}
		}
		s.started[p.CallID] = true
		s.hazards = append(s.hazards, Hazard{
			Token: ReviewToken(p.CallID, e.Seq), CallID: p.CallID, Tool: p.Tool,
			Seq: e.Seq, Started: e.Time, Paths: p.Paths,
		})
	case TypeFileSnapshot:
		var p FileSnapshot
		if e.Decode(&p) != nil {
			return
		}
		if s.snapped == nil {
			s.snapped = map[string]bool{}
		}
		s.snapped[p.Path] = true
	case TypeRestored:
		clear(s.snapped)
	case TypeToolFinished:
		var p ToolFinished
		if e.Decode(&p) != nil {
			return
		}
		s.hazards = slices.DeleteFunc(s.hazards, func(h Hazard) bool { return h.CallID == p.CallID })
		s.answer(p.CallID, p.Output, p.IsError)
	case TypeRecoveryAcknowledged:
		var p RecoveryAcknowledged
		if e.Decode(&p) != nil {
			return
		}
		for _, id := range p.CallIDs {
			s.hazards = slices.DeleteFunc(s.hazards, func(h Hazard) bool { return h.CallID == id })
			s.answer(id, UnknownOutcome, true)
		}
	case TypeTurnInterrupted:
		// Calls that never started will not run; calls that started and did
		// not finish stay open as hazards until acknowledged.
		var keep []string
		for _, id := range s.unanswered {
			if s.started[id] {
				keep = append(keep, id)
				continue
			}
			s.addResult(id, NotRun, true)
		}
		s.unanswered = keep
	}
}

// oracleSummary is the former Summary.Apply.
func oracleSummary(s *Summary, e Event) {
	if e.Seq > s.Head {
		s.Head = e.Seq
	}
	if s.Created.IsZero() || e.Seq == 1 {
		s.Created = e.Time
	}
	if e.Time.After(s.Updated) {
		s.Updated = e.Time
	}
	switch e.Type {
	case TypeSessionStarted:
		if e.Seq == 1 {
			s.Fold = FoldVersion
		}
		var p SessionStarted
		if e.Decode(&p) == nil {
			if p.ID != "" {
				s.ID = p.ID
			}
			s.Kind, s.Namespace, s.Workdir, s.Model, s.Parent = p.Kind, p.Namespace, p.Workdir, p.Model, p.Parent
		}
		if s.Status == "" {
			s.Status = StatusNew
		}
	case TypeUserPrompt:
		s.Messages++
		s.Status = StatusRunning
		if s.Title == "" {
			var p UserPrompt
			if e.Decode(&p) == nil {
				s.Title = Title(p.Text)
			}
		}
	case TypeAssistantMessage:
		s.Messages++
	case TypeToolStarted:
		var p ToolStarted
		if e.Decode(&p) == nil {
			s.Open = append(s.Open, p.CallID)
		}
	case TypeToolFinished:
		var p ToolFinished
		if e.Decode(&p) == nil {
			s.Open = slices.DeleteFunc(s.Open, func(id string) bool { return id == p.CallID })
		}
	case TypeRecoveryAcknowledged:
		var p RecoveryAcknowledged
		if e.Decode(&p) == nil {
			s.Open = slices.DeleteFunc(s.Open, func(id string) bool { return slices.Contains(p.CallIDs, id) })
		}
	case TypeTurnCompleted:
		s.Status = StatusCompleted
	case TypeTurnInterrupted:
		s.Status = StatusInterrupted
	}
	if len(s.Open) == 0 {
		s.Open = nil
	}
}

// randomLog returns a log of n events after session_started, of random
// types, whose payloads come from gen (odd ones now and then) and refer to a
// few call ids and paths, so that calls start, finish, snapshot files, get
// interrupted and acknowledged in every order.
func randomLog(g *payloadGen, n int) []Event {
	types := []Type{TypeUserPrompt, TypeAssistantMessage, TypeAssistantMessage, TypeToolStarted, TypeToolStarted,
		TypeFileSnapshot, TypeToolFinished, TypeToolFinished, TypeTurnCompleted, TypeTurnInterrupted,
		TypeRecoveryAcknowledged, TypeRestored, "x_future"}
	events := []Event{MustNew(TypeSessionStarted, SessionStarted{ID: "s1", Namespace: "ns"})}
	for range n {
		t := types[g.r.IntN(len(types))]
		e := Event{Type: t, Data: []byte(`{}`)}
		if _, ok := genTypes[t]; ok {
			e.Data = g.payload(t, g.chance(4))
		}
		if g.chance(40) {
			e.Data = nil
		}
		events = append(events, e)
	}
	for i := range events {
		events[i].Seq = int64(i + 1)
		events[i].Time = goldenTime.Add(time.Duration(g.r.IntN(1000)) * time.Second)
	}
	return events
}

// withoutSlab returns a copy of s without the spare room of its block slab,
// which the oracle does not have.
func withoutSlab(s *State) *State {
	c := *s
	c.slab = blockSlab{}
	return &c
}

func TestReplayMatchesOracle(t *testing.T) {
	logs := 400
	if testing.Short() {
		logs = 40
	}
	for seed := range logs {
		g := &payloadGen{r: rand.New(rand.NewPCG(uint64(seed), 11)), text: genTexts[seed%len(genTexts)]}
		events := randomLog(g, 60)
		want, got := &State{}, &State{}
		var wantSum, gotSum Summary
		for i, e := range events {
			oracleApply(want, e)
			got.Apply(e)
			got := withoutSlab(got)
			oracleSummary(&wantSum, e)
			gotSum.Apply(e)
			if reflect.DeepEqual(want, got) && reflect.DeepEqual(wantSum, gotSum) {
				continue
			}
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(State{}, blockSlab{})); diff != "" {
				t.Fatalf("seed %d: after event %d (%s %s) the state differs (-oracle +replay):\n%s", seed, i+1, e.Type, e.Data, diff)
			}
			if diff := cmp.Diff(wantSum, gotSum); diff != "" {
				t.Fatalf("seed %d: after event %d (%s %s) the summary differs (-oracle +replay):\n%s", seed, i+1, e.Type, e.Data, diff)
			}
		}
		if diff := cmp.Diff(want.Pending(), got.Pending()); diff != "" {
			t.Fatalf("seed %d: pending calls differ (-oracle +replay):\n%s", seed, diff)
		}
	}
}
