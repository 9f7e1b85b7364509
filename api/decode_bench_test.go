package api

import (
	"encoding/json"
	"testing"

	"github.com/wsgateway/wsgateway/rank"
)

// BenchmarkDecodeScore is one REST element through the shared decoder,
// the member id and the board's rules.
func BenchmarkDecodeScore(b *testing.B) {
	board := rank.Board{ID: "bench", Mode: rank.Incr}
	raw := json.RawMessage(`{"id":"c1-r12345","member":"alice","delta":42}`)
	b.ReportAllocs()
	for b.Loop() {
		if it := decodeScore(board, raw); it.err != nil {
			b.Fatal(it.err)
		}
	}
}
