package jobs

import "testing"

func TestTailBuffer(t *testing.T) {
	tests := []struct {
		max    int
		writes []string
		n      int
		want   string
	}{
		{max: 10, writes: []string{"abc"}, want: "abc"},
		{max: 10, writes: []string{"0123456789abc"}, want: "3456789abc"},
		{max: 4, writes: []string{"ab", "cd", "ef", "gh", "ij"}, want: "ghij"},
		{max: 10, writes: []string{"hello world"}, n: 5, want: "world"},
		{max: 10, writes: []string{"ééééé"}, n: 3, want: "é"}, // no half character
	}
	for _, tt := range tests {
		b := &tailBuffer{max: tt.max}
		var total int
		for _, w := range tt.writes {
			if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
			total += len(w)
		}
		got, n := b.tail(tt.n)
		if got != tt.want || n != int64(total) {
			t.Errorf("max %d writes %q tail(%d) = %q, %d; want %q, %d", tt.max, tt.writes, tt.n, got, n, tt.want, total)
		}
	}
}
