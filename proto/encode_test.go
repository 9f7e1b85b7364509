package proto

import (
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/wsgateway/wsgateway/rank"
)

// TestAppendAckMatchesJSON: the hand-written ack encoder writes exactly the
// bytes of Marshal (encoding/json without HTML escaping), escapes included,
// but for an ack without rank (Rank 0: a sharded board's, R24), which has
// no prev_rank either, where encoding/json writes one.
func TestAppendAckMatchesJSON(t *testing.T) {
	t.Parallel()
	pr := int64(7)
	zero := int64(0)
	acks := []Ack{
		{Type: TypeAck, ID: "c1-r12345", Board: "run_hero", Member: "alice", Score: 42, Rank: 1, Seq: 9},
		{Type: TypeAck, ID: "e.1:x", Board: "b", Member: "m@x.io", Score: -9007199254740991, Rank: 3, PrevRank: &pr, Duplicate: true, Seq: 1 << 40},
		{ID: "rest", Board: "b", Member: "m", PrevRank: &zero}, // REST shape: no type
		{Type: TypeAck, ID: `q"uo\te`, Board: "<b>&", Member: "naïve\u2028\x01", Score: 9007199254740991},
		{Type: TypeAck, ID: "c", Board: "league", Member: "m", Score: 3, Rank: 2, Seq: 4, Period: 9, Cohort: "silver-3", Tier: "silver"},
		{ID: "c", Board: "groups", Member: "m", Cohort: "12"}, // a cohort board without a league: no tier
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
		if r.IntN(2) == 0 {
			a.Period, a.Cohort, a.Tier = r.Int64(), str(), str()
		}
		acks = append(acks, a)
	}
	for _, a := range acks {
		want, err := Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if a.Rank == 0 {
			want = noPrevRank.ReplaceAll(want, nil)
		}
		if got := AppendAck([]byte("x"), &a); string(got[1:]) != string(want) || got[0] != 'x' {
			t.Fatalf("AppendAck(%+v)\n got %s\nwant x%s", a, got, want)
		}
	}
}

// noPrevRank matches the prev_rank field of encoding/json's ack.
var noPrevRank = regexp.MustCompile(`,"prev_rank":(null|-?[0-9]+)`)

// TestAckWithoutRank: an ack whose Rank is 0 has neither rank nor
// prev_rank (R24: a sharded board's acks without ack_rank global).
func TestAckWithoutRank(t *testing.T) {
	t.Parallel()
	got := string(AppendAck(nil, &Ack{Type: TypeAck, ID: "s1", Board: "hot", Member: "m", Score: 5, Seq: 3}))
	if want := `{"type":"ack","id":"s1","board":"hot","member":"m","score":5,"duplicate":false,"seq":3}`; got != want {
		t.Fatalf("%s, want %s", got, want)
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

// TestAppendAckNoAlloc: an ack built by AckOf and encoded allocates
// nothing, not even its PrevRank (the ack of nearly every request is
// built on the stack).
func TestAppendAckNoAlloc(t *testing.T) {
	buf := make([]byte, 0, 256)
	res := rank.Result{Board: "b", Member: "m", Score: 5, Rank: 2, PrevRank: 3, Seq: 9}
	n := testing.AllocsPerRun(100, func() {
		a := AckOf("c1-r1", res)
		a.Type = TypeAck
		buf = AppendAck(buf[:0], &a)
	})
	if n != 0 {
		t.Fatalf("AckOf and AppendAck: %v allocations per ack, want 0", n)
	}
}

// TestAckOf: every field of a result reaches its ack; a member new to the
// board has a null prev_rank.
func TestAckOf(t *testing.T) {
	t.Parallel()
	res := rank.Result{Board: "b", Member: "m", Score: 5, Rank: 2, PrevRank: 3, PrevScore: 4, Duplicate: true,
		Seq: 9, Period: 7, Decimals: 3, Cohort: "c", Tier: "gold"}
	got, _ := json.Marshal(AckOf("r1", res))
	if want := `{"id":"r1","board":"b","member":"m","score":5,"rank":2,"prev_rank":3,"duplicate":true,"seq":9,"period":7,"cohort":"c","tier":"gold"}`; string(got) != want {
		t.Fatalf("ack %s, want %s", got, want)
	}
	if a := AckOf("r1", res); a.Decimals != 3 {
		t.Fatalf("decimals %d, want 3", a.Decimals)
	}
	res.PrevRank = 0
	if a := AckOf("r1", res); a.PrevRank != nil {
		t.Fatalf("a new member's prev_rank %d, want null", *a.PrevRank)
	}
}

// TestAppendErrorMatchesJSON: the hand-written error encoder writes exactly
// the bytes of Marshal (encoding/json without HTML escaping), the R30
// fields included, and they decode back.
func TestAppendErrorMatchesJSON(t *testing.T) {
	t.Parallel()
	frames := []Error{
		{Type: TypeError, ID: "r1", Code: CodeRateLimited, Message: "rate limited", RetryAfterMS: 250},
		{Type: TypeError, Code: CodeBadRequest, Message: `bad "json" <here> & there`},
		{Type: TypeError, ID: "s1", Code: CodeBoardClosed, Message: "board is closed: not started yet",
			Closed: rank.Closed{Reason: rank.ClosedNotStarted, StartsAt: 1_800_000_000_000}},
		{Type: TypeError, ID: "s2", Code: CodeBoardClosed, Message: "board is closed: it has ended",
			Closed: rank.Closed{Reason: rank.ClosedEnded, FinalAt: 1_800_000_000_001}},
		{Type: TypeError, ID: "s3", Code: CodeBoardClosed, Message: "board is closed: period 20261127 is past its grace",
			Closed: rank.Closed{Reason: rank.ClosedPeriodOver, Period: 20261127, GraceEnd: 1_800_000_000_002}},
		{Type: TypeError, ID: "s4", Code: CodeBoardClosed, Message: "m", Closed: rank.Closed{Reason: rank.ClosedOutsideWindow}},
		{},
	}
	r := rand.New(rand.NewPCG(5, 6))
	alphabet := []byte("aZ09_.:-@<>&\"\\\x00\x1f\x7f é")
	str := func() string {
		b := make([]byte, r.IntN(8))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	n := func() int64 {
		if r.IntN(2) == 0 {
			return 0
		}
		return r.Int64() - r.Int64()
	}
	for range 500 {
		frames = append(frames, Error{Type: str(), ID: str(), Code: str(), Message: str(), RetryAfterMS: n(),
			Closed: rank.Closed{Reason: str(), StartsAt: n(), FinalAt: n(), Period: n(), GraceEnd: n()}})
	}
	for _, e := range frames {
		want, err := Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		got := AppendError([]byte("x"), &e)
		if string(got[1:]) != string(want) || got[0] != 'x' {
			t.Fatalf("AppendError(%+v)\n got %s\nwant x%s", e, got, want)
		}
		var back Error
		if !utf8.ValidString(e.Type + e.ID + e.Code + e.Message + e.Reason) {
			continue // a lone byte of é comes back as U+FFFD
		}
		if err := json.Unmarshal(got[1:], &back); err != nil || back != e {
			t.Fatalf("AppendError(%+v) decodes to %+v, %v", e, back, err)
		}
	}
}

// TestClosedFieldsOnTheWire: each R30 reason carries its own fields under
// the contract's names, in the frame and in the REST error object.
func TestClosedFieldsOnTheWire(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		c    rank.Closed
		want string
	}{
		{rank.Closed{Reason: rank.ClosedNotStarted, StartsAt: 5}, `"reason":"not_started","starts_at":5`},
		{rank.Closed{Reason: rank.ClosedEnded, FinalAt: 6}, `"reason":"ended","final_at":6`},
		{rank.Closed{Reason: rank.ClosedPeriodOver, Period: 2026112714, GraceEnd: 7}, `"reason":"period_over","period":2026112714,"grace_end":7`},
		{rank.Closed{Reason: rank.ClosedOutsideWindow}, `"reason":"outside_window"`},
	} {
		frame := string(AppendError(nil, &Error{Type: TypeError, Code: CodeBoardClosed, Message: "m", Closed: tc.c}))
		if want := `{"type":"error","code":"board_closed","message":"m",` + tc.want + `}`; frame != want {
			t.Errorf("frame %s, want %s", frame, want)
		}
		body, err := json.Marshal(ErrorBody{Error: ErrorDetail{Code: CodeBoardClosed, Message: "m", Closed: tc.c}})
		if want := `{"error":{"code":"board_closed","message":"m",` + tc.want + `}}`; err != nil || string(body) != want {
			t.Errorf("REST body %s, want %s", body, want)
		}
	}
}

// TestAppendErrorNoAlloc: an error frame into a pooled buffer allocates
// nothing.
func TestAppendErrorNoAlloc(t *testing.T) {
	buf := make([]byte, 0, 256)
	n := testing.AllocsPerRun(100, func() {
		e := Error{Type: TypeError, ID: "c1-r1", Code: CodeBoardClosed, Message: "board is closed: it has ended",
			Closed: rank.Closed{Reason: rank.ClosedEnded, FinalAt: 1_800_000_000_000}}
		buf = AppendError(buf[:0], &e)
	})
	if n != 0 {
		t.Fatalf("AppendError: %v allocations per frame, want 0", n)
	}
}

func BenchmarkAppendError(b *testing.B) {
	e := Error{Type: TypeError, ID: "c1-r12345", Code: CodeBoardClosed, Message: "board is closed: period 20261127 is past its grace",
		Closed: rank.Closed{Reason: rank.ClosedPeriodOver, Period: 20261127, GraceEnd: 1_800_000_000_000}}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendError(buf[:0], &e)
	}
}

// TestMarshalKeepsHTMLCharacters: messages say <, > and & as they are
// (REST bodies, error frames, upgrade refusals), and the JSON decodes to
// the same text.
func TestMarshalKeepsHTMLCharacters(t *testing.T) {
	const msg = "missing bearer token: send Authorization: Bearer <jwt> & retry"
	body, err := Marshal(ErrorBody{Error: ErrorDetail{Code: CodeUnauthorized, Message: msg}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"error":{"code":"unauthorized","message":"` + msg + `"}}`; string(body) != want {
		t.Fatalf("Marshal = %s, want %s", body, want)
	}
	frame := AppendError(nil, &Error{Type: TypeError, Code: CodeBadRequest, Message: msg})
	var back Error
	if err := json.Unmarshal(frame, &back); err != nil || back.Message != msg || strings.Contains(string(frame), `\u003c`) {
		t.Fatalf("error frame %s (%v)", frame, err)
	}
}
