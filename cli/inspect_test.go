package cli

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/session"
)

func TestWriteSessionsMatchesEncodingJSON(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 22, 10, 0, 123456000, time.UTC)
	lists := [][]session.Summary{
		nil,
		{{ID: "a", Head: 3, Messages: 2, Status: session.StatusCompleted, Created: t0, Updated: t0}},
		{
			{ID: "b", Head: 9, Messages: 4, Status: session.StatusRunning, Title: `quotes " and \ back <tag> & é 日本 "x"` + "\n\t\x01", Created: t0, Updated: t0.Add(time.Second), Open: []string{"c1", "c2"}},
			{ID: "c-r9", Head: 10, Status: session.StatusNew, Created: t0, Updated: t0, Parent: &session.ForkRef{Session: "b", Seq: 9}},
			{ID: "d", Head: 4, Status: session.StatusCompleted, Created: t0, Updated: t0, Imported: &session.Import{From: "/x/a \"b\".jsonl", Host: "h", At: t0, Head: 7, Salvaged: true}},
		},
	}
	for _, list := range lists {
		var got bytes.Buffer
		if err := writeSessions(&got, list); err != nil {
			t.Fatal(err)
		}
		want := make([]sessionJSON, 0, len(list))
		for _, s := range list {
			want = append(want, sessionJSON{ID: s.ID, Revision: s.Head, Messages: s.Messages, Status: s.Status, Title: s.Title,
				Created: s.Created, Updated: s.Updated, Hazards: s.Hazards(), Parent: s.Parent, Imported: s.Imported})
		}
		var gotV, wantV any
		if err := json.Unmarshal(got.Bytes(), &gotV); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, got.Bytes())
		}
		wb, _ := json.Marshal(want)
		json.Unmarshal(wb, &wantV)
		gb, _ := json.Marshal(gotV)
		wb2, _ := json.Marshal(wantV)
		if !bytes.Equal(gb, wb2) {
			t.Fatalf("got  %s\nwant %s", gb, wb2)
		}
		// Field by field, the compact encodings agree byte for byte.
		for i, s := range list {
			one, _ := json.Marshal(want[i])
			if b := appendSession(nil, s); !bytes.Equal(b, one) {
				t.Fatalf("object %d:\n got %s\nwant %s", i, b, one)
			}
		}
	}
}
