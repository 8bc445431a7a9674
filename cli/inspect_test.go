package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
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
			if b := appendSession(nil, s, new(timeWriter)); !bytes.Equal(b, one) {
				t.Fatalf("object %d:\n got %s\nwant %s", i, b, one)
			}
		}
	}
}

// TestTimeWriterMatchesEncodingJSON: one timeWriter, as a listing uses it,
// writes every time as encoding/json does: times of the same day in a row
// (its remembered date), days before 1970, whole seconds, every length of
// fraction, another zone, years out of its range.
func TestTimeWriterMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	zone := time.FixedZone("x", -5*3600-30*60)
	var times []time.Time
	for range 20000 {
		var tm time.Time
		switch r.IntN(6) {
		case 0: // anywhere in years 1 to 9999
			tm = time.Unix(r.Int64N(315537897600)-62135596800, r.Int64N(1e9)).UTC()
		case 1: // whole seconds around 1970
			tm = time.Unix(r.Int64N(4e5)-2e5, 0).UTC()
		case 2: // microseconds, as summaries hold them
			tm = time.UnixMicro(r.Int64N(4e15)).UTC()
		case 3: // the same day as the last
			if len(times) > 0 && times[len(times)-1].Location() == time.UTC {
				tm = times[len(times)-1].Add(time.Duration(r.Int64N(int64(time.Hour))))
			} else {
				tm = time.Unix(1764540000, 0).UTC()
			}
		case 4:
			tm = time.Unix(r.Int64N(4e9), r.Int64N(1e9)).In(zone)
		default: // a fraction with trailing zeros
			tm = time.Unix(r.Int64N(4e9), r.Int64N(1000)*1e6).UTC()
		}
		times = append(times, tm)
	}
	times = append(times, time.Time{}, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC))
	var tw timeWriter
	for _, tm := range times {
		got := string(tw.append(nil, tm))
		want, err := json.Marshal(tm)
		if err != nil {
			want = []byte(`"` + tm.Format(time.RFC3339Nano) + `"`) // out of JSON's range: as AppendFormat writes it
		}
		if `"`+got+`"` != string(want) {
			t.Fatalf("%v: wrote %s, want %s", tm, got, want)
		}
	}
}

func BenchmarkWriteSessions10k(b *testing.B) {
	t0 := time.Date(2026, 11, 30, 22, 10, 0, 0, time.UTC)
	list := make([]session.Summary, 10000)
	for i := range list {
		at := t0.Add(time.Duration(i) * 7919 * time.Millisecond).Add(time.Duration(i%1000) * time.Microsecond)
		list[i] = session.Summary{ID: fmt.Sprintf("01m91efpr31tqze5mg4v%06d", i), Head: 11, Messages: 3, Status: session.StatusCompleted, Title: "Write out.txt", Created: at, Updated: at.Add(time.Second)}
	}
	for b.Loop() {
		if err := writeSessions(io.Discard, list); err != nil {
			b.Fatal(err)
		}
	}
}
