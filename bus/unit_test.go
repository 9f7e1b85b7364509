package bus

import (
	"context"
	"slices"
	"strings"
	"testing"
)

func TestTokenRoundTrip(t *testing.T) {
	t.Parallel()
	for _, board := range []string{
		"run_hero", "a.b.c", ".", "..", "a-b_C9", "50%", "%2E", "x y", "*", ">", "é", "a.%.b",
	} {
		tok := encodeToken(board)
		if tok == "" || strings.ContainsAny(tok, ". *>\t\r\n") {
			t.Errorf("encodeToken(%q) = %q: not a single subject token", board, tok)
		}
		got, ok := decodeToken(tok)
		if !ok || got != board {
			t.Errorf("decodeToken(encodeToken(%q)=%q) = %q, %v", board, tok, got, ok)
		}
	}
	// Distinct boards never share a token.
	if encodeToken("a.b") == encodeToken("a%2Eb") {
		t.Error("a.b and a%2Eb collide")
	}
	if got := encodeToken("plain-Board_1"); got != "plain-Board_1" {
		t.Errorf("a dot-free valid id must be its own token, got %q", got)
	}
}

func TestDecodeTokenRejects(t *testing.T) {
	t.Parallel()
	for _, tok := range []string{"a.b", "%2", "%", "%zz", "%41", "a b", "%2e"} {
		if got, ok := decodeToken(tok); ok {
			t.Errorf("decodeToken(%q) = %q, ok; want rejected", tok, got)
		}
	}
}

func TestRing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		max     int
		push    int
		want    []int
		dropped []int
	}{
		{"under bound", 5, 3, []int{0, 1, 2}, nil},
		{"at bound", 4, 4, []int{0, 1, 2, 3}, nil},
		{"drops oldest", 3, 7, []int{4, 5, 6}, []int{0, 1, 2, 3}},
		{"grows past 64", 1000, 200, seq(0, 200), nil},
		{"wraps after growth", 100, 250, seq(150, 250), seq(0, 150)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRing[int](tt.max)
			var dropped []int
			for i := range tt.push {
				if d, ok := r.push(i); ok {
					dropped = append(dropped, d)
				}
				if r.len() > tt.max || len(r.buf) > tt.max {
					t.Fatalf("ring holds %d (buf %d) > max %d", r.len(), len(r.buf), tt.max)
				}
			}
			if got := r.drainTo(nil); !slices.Equal(got, tt.want) {
				t.Errorf("drained %v, want %v", got, tt.want)
			}
			if !slices.Equal(dropped, tt.dropped) {
				t.Errorf("dropped %v, want %v", dropped, tt.dropped)
			}
			if r.len() != 0 || len(r.drainTo(nil)) != 0 {
				t.Error("ring not empty after drain")
			}
			// Reusable after a drain, in order.
			r.push(7)
			r.push(8)
			if got := r.drainTo(nil); !slices.Equal(got, []int{7, 8}) {
				t.Errorf("after reuse drained %v", got)
			}
		})
	}
}

func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
	}{
		{"wildcard prefix", Config{Subject: "lb.*"}},
		{"empty token", Config{Subject: "lb..x"}},
		{"space", Config{Subject: "l b"}},
		{"negative pending", Config{MaxPending: -1}},
		{"bad url", Config{URL: "nats://[::1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.cfg.Logger = testLogger(t)
			b, err := New(context.Background(), tt.cfg)
			if err == nil {
				b.Close()
				t.Fatal("New accepted a bad config")
			}
			if !strings.HasPrefix(err.Error(), "bus: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	got := redactURL("nats://u:secret@h1:4222,nats://h2:4222,tok@h3")
	if strings.Contains(got, "secret") || strings.Contains(got, "tok@") {
		t.Errorf("redactURL leaked a credential: %q", got)
	}
	if !strings.Contains(got, "h2:4222") {
		t.Errorf("redactURL lost a host: %q", got)
	}
}

func (r *ring[T]) len() int { return r.n }
