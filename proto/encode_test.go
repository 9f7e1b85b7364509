package proto

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestAppendAckMatchesJSON: the hand-written ack encoder writes exactly the
// bytes of encoding/json, escapes included.
func TestAppendAckMatchesJSON(t *testing.T) {
	t.Parallel()
	pr := int64(7)
	zero := int64(0)
	acks := []Ack{
		{Type: TypeAck, ID: "c1-r12345", Board: "run_hero", Member: "alice", Score: 42, Rank: 1, Seq: 9},
		{Type: TypeAck, ID: "e.1:x", Board: "b", Member: "m@x.io", Score: -9007199254740991, Rank: 3, PrevRank: &pr, Duplicate: true, Seq: 1 << 40},
		{ID: "rest", Board: "b", Member: "m", PrevRank: &zero}, // REST shape: no type
		{Type: TypeAck, ID: `q"uo\te`, Board: "<b>&", Member: "naïve\u2028\x01", Score: 9007199254740991},
		{},
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("aZ09_.:-@<>&\"\\\x00\x1f\x7f é")
	str := func() string {
		b := make([]byte, r.IntN(8))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 500 {
		a := Ack{Type: str(), ID: str(), Board: str(), Member: str(),
			Score: r.Int64N(1<<54) - 1<<53, Rank: r.Int64(), Duplicate: r.IntN(2) == 0, Seq: r.Int64()}
		if r.IntN(2) == 0 {
			p := r.Int64()
			a.PrevRank = &p
		}
		acks = append(acks, a)
	}
	for _, a := range acks {
		want, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendAck([]byte("x"), &a); string(got[1:]) != string(want) || got[0] != 'x' {
			t.Fatalf("AppendAck(%+v)\n got %s\nwant x%s", a, got, want)
		}
	}
}

func BenchmarkAppendAck(b *testing.B) {
	pr := int64(12)
	a := Ack{Type: TypeAck, ID: "c1-r12345", Board: "run_hero", Member: "alice", Score: 4242, Rank: 10, PrevRank: &pr, Seq: 123456}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendAck(buf[:0], &a)
	}
}

// TestAppendAckNoAlloc: encoding an ack allocates nothing, not even its
// PrevRank (the ack of nearly every request is built on the stack).
func TestAppendAckNoAlloc(t *testing.T) {
	buf := make([]byte, 0, 256)
	n := testing.AllocsPerRun(100, func() {
		pr := int64(3)
		a := Ack{Type: TypeAck, ID: "c1-r1", Board: "b", Member: "m", Score: 5, Rank: 2, PrevRank: &pr, Seq: 9}
		buf = AppendAck(buf[:0], &a)
	})
	if n != 0 {
		t.Fatalf("AppendAck: %v allocations per ack, want 0", n)
	}
}
