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

// BenchmarkEncodeAck is one REST ack through the shared encoder.
func BenchmarkEncodeAck(b *testing.B) {
	res := rank.Result{Board: "bench", Member: "alice", Score: 4242, Rank: 10, PrevRank: 12, Seq: 123456}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = appendAck(buf[:0], "c1-r12345", res)
	}
}
