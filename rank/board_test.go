package rank

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseBoardDefaults(t *testing.T) {
	t.Parallel()
	b, err := ParseBoard("run_hero", []byte(`{"title":"Run hero"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultBoard("run_hero")
	want.Title = "Run hero"
	if b != want {
		t.Fatalf("got %+v, want %+v", b, want)
	}
	if !b.ClientWrites || b.Top != 10 || time.Duration(b.IdempotencyWindow) != 10*time.Minute {
		t.Fatalf("defaults of §5 not applied: %+v", b)
	}
	// A stored config round-trips through its own JSON.
	j, _ := json.Marshal(b)
	b2, err := ParseBoard("run_hero", j)
	if err != nil || b2 != b {
		t.Fatalf("round trip: %+v, %v", b2, err)
	}
}

func TestResetDurations(t *testing.T) {
	t.Parallel()
	for _, r := range []string{"1m", "2m", "15m", "90m", "1h30m", "6h", "24h"} {
		if _, err := ParseBoard("b", []byte(`{"reset":"`+r+`"}`)); err != nil {
			t.Errorf("reset %s: %v", r, err)
		}
	}
}

func TestParseBoardNamesTheField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ body, field string }{
		{`{"order":"up"}`, "order"},
		{`{"mode":"max"}`, "mode"},
		{`{"tiebreak":"coin"}`, "tiebreak"},
		{`{"reset":"yearly"}`, "reset"},
		{`{"reset":"7m"}`, "reset"},  // does not divide 24h
		{`{"reset":"30s"}`, "reset"}, // under a minute
		{`{"reset":"48h"}`, "reset"}, // longer than a day
		{`{"reset":"-1h"}`, "reset"},
		{`{"reset":"0s"}`, "reset"},
		{`{"tz":"Mars/Olympus"}`, "tz"},
		{`{"top":0}`, "top"},
		{`{"top":101}`, "top"},
		{`{"top":"10"}`, "top"},
		{`{"max_delta":-1}`, "max_delta"},
		{`{"idempotency_window":"0s"}`, "idempotency_window"},
		{`{"idempotency_window":"61m"}`, "idempotency_window"},
		{`{"idempotency_window":600}`, "idempotency_window"},
		{`{"idempotency_window":"forever"}`, "idempotency_window"},
		{`{"client_writes":"yes"}`, "client_writes"},
		{`{"title":"` + strings.Repeat("x", 129) + `"}`, "title"},
		{`{"colour":"red"}`, "colour"},
		{`{"id":"other"}`, "id"},
		{`{"Order":"asc"}`, "Order"},
		{`{"top":5,"top":6}`, "top"},
	} {
		_, err := ParseBoard("b1", []byte(tc.body))
		if !errors.Is(err, ErrInvalidConfig) && !errors.Is(err, ErrInvalidBoard) {
			t.Errorf("%s: err = %v, want an invalid config", tc.body, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: message %q does not name %s", tc.body, err, tc.field)
		}
	}
	for _, body := range []string{`{} {}`, `[]`, `{"top":5`, ``} {
		if _, err := ParseBoard("b1", []byte(body)); err == nil {
			t.Errorf("%q accepted", body)
		}
	}
}

func TestIDRules(t *testing.T) {
	t.Parallel()
	for id, ok := range map[string]bool{
		"run_hero": true, "a.b-c_D9": true, strings.Repeat("a", 64): true,
		"": false, strings.Repeat("a", 65): false, "a b": false, "{a}": false, "a:b": false, "a*": false, "é": false,
	} {
		if ValidBoardID(id) != ok {
			t.Errorf("ValidBoardID(%q) = %v", id, !ok)
		}
	}
	for id, ok := range map[string]bool{
		"alice": true, "user:42@eu-1.x_y": true, strings.Repeat("m", 64): true,
		"": false, strings.Repeat("m", 65): false, "a b": false, "{x}": false, "a*": false, "a|b": false,
	} {
		if ValidMemberID(id) != ok {
			t.Errorf("ValidMemberID(%q) = %v", id, !ok)
		}
	}
}

func TestEventCheckAndCombine(t *testing.T) {
	t.Parallel()
	incr := DefaultBoard("b")
	best := DefaultBoard("b")
	best.Mode, best.Order = Best, Asc
	capped := DefaultBoard("b")
	capped.MaxDelta = 100
	ev := func(op Op, n int64) Event { return Event{Board: "b", ID: "1", Member: "m", Op: op, Amount: n} }
	for _, tc := range []struct {
		b    Board
		e    Event
		want error
	}{
		{incr, ev(OpDelta, 5), nil},
		{incr, ev(OpValue, 5), ErrBadRequest},
		{best, ev(OpDelta, 5), ErrBadRequest},
		{incr, ev(OpDelta, MaxScore+1), ErrInvalidScore},
		{incr, ev(OpDelta, -MaxScore-1), ErrInvalidScore},
		{capped, ev(OpDelta, 101), ErrDeltaTooLarge},
		{capped, ev(OpDelta, -101), ErrDeltaTooLarge},
		{capped, ev(OpDelta, 100), nil},
		{incr, Event{Board: "b", ID: "1", Member: "a b", Op: OpDelta}, ErrInvalidMember},
		{incr, Event{Board: "b", Member: "m", Op: OpDelta}, ErrBadRequest},
	} {
		if err := tc.e.Check(tc.b); !errors.Is(err, tc.want) && !(err == nil && tc.want == nil) {
			t.Errorf("Check(%+v on %s) = %v, want %v", tc.e, tc.b.Mode, err, tc.want)
		}
	}
	if n, err := Combine(incr, true, MaxScore-1, ev(OpDelta, 1)); err != nil || n != MaxScore {
		t.Fatalf("incr to the edge = %d, %v", n, err)
	}
	if _, err := Combine(incr, true, MaxScore, ev(OpDelta, 1)); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("incr past the edge: %v", err)
	}
	if n, _ := Combine(best, true, 50, ev(OpValue, 70)); n != 50 {
		t.Fatalf("best on asc kept %d, want 50 (lower is better)", n)
	}
	if n, _ := Combine(best, true, 50, ev(OpValue, 30)); n != 30 {
		t.Fatalf("best on asc = %d, want 30", n)
	}
}

func TestPayloadHashIgnoresName(t *testing.T) {
	t.Parallel()
	a := Event{Board: "b", ID: "1", Member: "m", Name: "A", Op: OpDelta, Amount: 5}
	b := a
	b.Name = "B"
	if a.PayloadHash() != b.PayloadHash() {
		t.Fatal("the display name changed the payload hash")
	}
	for _, c := range []Event{{Member: "m2", Op: OpDelta, Amount: 5}, {Member: "m", Op: OpValue, Amount: 5}, {Member: "m", Op: OpDelta, Amount: 6}} {
		if c.PayloadHash() == a.PayloadHash() {
			t.Errorf("%+v hashes like %+v", c, a)
		}
	}
}

// FuzzParseBoard: any input either fails with a config error or yields a
// board that validates and survives a JSON round trip unchanged.
func FuzzParseBoard(f *testing.F) {
	for _, s := range []string{`{}`, `{"id":"b","order":"asc","mode":"best","reset":"weekly","tz":"Asia/Tokyo"}`,
		`{"top":100,"max_delta":9007199254740991}`, `{"idempotency_window":"1s"}`, `{"title":"\u00e9\u00e9"}`, `nul`, `{"reset":"15m"}`, `{"reset":"7m"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		b, err := ParseBoard("b", []byte(body))
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) && !errors.Is(err, ErrInvalidBoard) {
				t.Fatalf("error %v is not a config error", err)
			}
			return
		}
		if err := b.Validate(); err != nil {
			t.Fatalf("parsed board does not validate: %v", err)
		}
		j, _ := json.Marshal(b)
		b2, err := ParseBoard("b", j)
		if err != nil || b2 != b {
			t.Fatalf("round trip changed %+v into %+v (%v)", b, b2, err)
		}
	})
}
