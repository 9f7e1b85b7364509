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
		{`{"starts_at":"tomorrow"}`, "starts_at"},
		{`{"starts_at":1764000000000}`, "starts_at"},
		{`{"starts_at":"1969-12-31T23:59:59Z"}`, "starts_at"},
		{`{"ends_at":"2026-12-01 18:00"}`, "ends_at"},
		{`{"starts_at":"2026-12-01T18:00:00Z","ends_at":"2026-12-01T18:00:00Z"}`, "ends_at"},
		{`{"starts_at":"2026-12-01T18:00:00Z","ends_at":"2026-12-01T17:00:00Z"}`, "ends_at"},
		{`{"grace":"-1s"}`, "grace"},
		{`{"grace":"25h"}`, "grace"},
		{`{"grace":"1.5ms"}`, "grace"},
		{`{"grace":60}`, "grace"},
		{`{"max_submissions":-1}`, "max_submissions"},
		{`{"max_submissions":1.5}`, "max_submissions"},
		{`{"retain":0}`, "retain"},
		{`{"retain":401}`, "retain"},
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

func TestLifecycleConfig(t *testing.T) {
	t.Parallel()
	b, err := ParseBoard("t", []byte(`{"starts_at":"2026-12-01T19:00:00+01:00","ends_at":"2026-12-01T20:00:00.250Z",
		"grace":"30s","max_submissions":3,"retain":7}`))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)
	end := time.Date(2026, 12, 1, 20, 0, 0, 250e6, time.UTC)
	if !b.StartsAt.Equal(start) || !b.EndsAt.Equal(end) || b.Grace != Duration(30*time.Second) ||
		b.MaxSubmissions != 3 || b.Retain != 7 {
		t.Fatalf("parsed %+v", b)
	}
	j, _ := json.Marshal(b)
	if !strings.Contains(string(j), `"starts_at":"2026-12-01T18:00:00Z"`) || !strings.Contains(string(j), `"ends_at":"2026-12-01T20:00:00.25Z"`) {
		t.Errorf("JSON %s", j)
	}
	if b2, err := ParseBoard("t", j); err != nil || b2 != b {
		t.Fatalf("round trip: %+v, %v", b2, err)
	}
	d, _ := json.Marshal(DefaultBoard("d"))
	for _, f := range []string{`"starts_at":null`, `"ends_at":null`, `"grace":"0s"`, `"max_submissions":0`, `"retain":2`} {
		if !strings.Contains(string(d), f) {
			t.Errorf("default config %s lacks %s", d, f)
		}
	}
	for _, tc := range []struct {
		at   time.Time
		want State
	}{
		{start.Add(-time.Millisecond), Scheduled},
		{start, Open},
		{end.Add(-time.Millisecond), Open},
		{end, Closing},
		{end.Add(30*time.Second - time.Millisecond), Closing},
		{end.Add(30 * time.Second), Final},
	} {
		if got := b.StateAt(tc.at); got != tc.want {
			t.Errorf("StateAt(%s) = %s, want %s", tc.at, got, tc.want)
		}
	}
	if got := DefaultBoard("d").StateAt(time.Unix(0, 0)); got != Open {
		t.Errorf("an unscheduled board is %s", got)
	}
	b.Grace = 0
	if got := b.StateAt(end); got != Final {
		t.Errorf("no grace: StateAt(ends_at) = %s, want final", got)
	}
}

func TestAdmit(t *testing.T) {
	t.Parallel()
	b := DefaultBoard("a")
	b.Reset = "10m"
	b.Grace = Duration(time.Minute)
	p0 := PeriodAt(b, time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC))
	p1 := PeriodAt(b, p0.End)
	at := func(now, t time.Time) (int64, error) {
		p, err := b.Admit(t, now, PeriodAt(b, now))
		return p.Index, err
	}
	for _, tc := range []struct {
		name   string
		now, t time.Time
		want   int64
		err    error
	}{
		{"current", p1.Start, p1.Start, p1.Index, nil},
		{"late within grace", p1.Start.Add(time.Minute - time.Millisecond), p0.End.Add(-time.Millisecond), p0.Index, nil},
		{"late at end+grace", p1.Start.Add(time.Minute), p0.End.Add(-time.Millisecond), 0, ErrBoardClosed},
		{"two periods back", p1.End, p0.End.Add(-time.Millisecond), 0, ErrBoardClosed},
		{"next period", p0.End.Add(-time.Second), p0.End, 0, ErrBoardClosed},
		{"5s ahead", p1.Start, p1.Start.Add(5 * time.Second), p1.Index, nil},
		{"over 5s ahead", p1.Start, p1.Start.Add(5*time.Second + time.Millisecond), 0, ErrAtAhead},
	} {
		got, err := at(tc.now, tc.t)
		if got != tc.want || !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
			t.Errorf("%s: %d, %v; want %d, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
	// The board's end ends the period early for grace.
	b.EndsAt = At(p1.Start.Add(time.Minute))
	if _, err := b.Admit(p1.Start, p1.Start.Add(2*time.Minute-time.Millisecond), p1); err != nil {
		t.Errorf("closing: %v", err)
	}
	if _, err := b.Admit(p1.Start, p1.Start.Add(2*time.Minute), p1); !errors.Is(err, ErrBoardClosed) {
		t.Errorf("final: %v", err)
	}
	if _, err := b.Admit(b.EndsAt.Time, b.EndsAt.Time, p1); !errors.Is(err, ErrBoardClosed) {
		t.Errorf("at ends_at: %v", err)
	}
}

// TestOneKindPerBoard: a board is derived, hot or sharded, at most one of
// them, and only plain boards are sources (docs/protocol.md §8).
func TestOneKindPerBoard(t *testing.T) {
	t.Parallel()
	const union = `"source":{"kind":"union","boards":["a","b"]}`
	const decay = `"decay":{"bucket":"1h","buckets":24,"factor":0.9}`
	for _, tc := range []struct{ body, field string }{
		{`{` + union + `,` + decay + `}`, "decay"},
		{`{` + union + `,"shards":4}`, "shards"},
		{`{` + decay + `,"shards":4}`, "shards"},
		{`{` + decay + `,"group":"g"}`, "group"},
		{`{"shards":4,"group":"g"}`, "group"},
		// History (§11) is for boards that apply events themselves.
		{`{` + union + `,"group":"g","history":1}`, "history"},
		{`{` + decay + `,"history":1}`, "history"},
		{`{"history":101}`, "history"},
	} {
		_, err := ParseBoard("x", []byte(tc.body))
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "field "+tc.field+":") {
			t.Errorf("%s: %v, want ErrInvalidConfig naming %s", tc.body, err, tc.field)
		}
	}
	for _, ok := range []string{`{` + decay + `}`, `{"shards":4}`, `{` + union + `,"group":"g"}`, `{"group":"g"}`, `{"shards":4,"history":100}`} {
		if _, err := ParseBoard("x", []byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}

	hot, err := ParseBoard("hot", []byte(`{`+decay+`}`))
	if err != nil {
		t.Fatal(err)
	}
	sharded, err := ParseBoard("sh", []byte(`{"shards":4}`))
	if err != nil {
		t.Fatal(err)
	}
	plain := DefaultBoard("plain")
	plain.Group = "plain"
	for _, src := range []Board{hot, sharded} {
		u, err := ParseBoard("u", []byte(`{"source":{"kind":"union","boards":["plain","`+src.ID+`"]}}`))
		if err != nil {
			t.Fatal(err)
		}
		get := func(id string) (Board, []Dep, bool) {
			for _, b := range []Board{plain, src} {
				if b.ID == id {
					b.Group = "u" // the same group, so only the kind can refuse it
					return b, nil, true
				}
			}
			return Board{}, nil, false
		}
		u.Group = "u"
		if _, err := ResolveDerived(u, Board{}, get); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "field source:") || !strings.Contains(err.Error(), src.ID) {
			t.Errorf("a union over %s: %v, want ErrInvalidConfig naming source and the board", src.ID, err)
		}
	}
}

// TestPayloadHashMeta: meta is part of an event's payload (R4) when sent,
// hashed without allocating; an event without it keeps its old hash. Not
// parallel: AllocsPerRun needs the test alone.
func TestPayloadHashMeta(t *testing.T) {
	e := Event{Member: "m", Op: OpDelta, Amount: 5}
	plain := e.PayloadHash()
	e.Meta = `{"a":1}`
	withA := e.PayloadHash()
	e.Meta = `{"a":2}`
	withB := e.PayloadHash()
	if plain == withA || withA == withB {
		t.Fatalf("hashes %x %x %x: meta must tell payloads apart", plain, withA, withB)
	}
	if n := testing.AllocsPerRun(100, func() { e.PayloadHash() }); n != 0 {
		t.Errorf("PayloadHash with meta: %.0f allocations", n)
	}
	if (Event{Member: "m", Op: OpDelta, Amount: 5}).PayloadHash() != plain {
		t.Error("the hash of an event without meta changed")
	}
}
