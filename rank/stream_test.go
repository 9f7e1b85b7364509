package rank

import (
	"testing"
	"time"
)

func TestTransitions(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)
	ms := func(d time.Duration) time.Time { return t0.Add(d) }
	for _, tc := range []struct {
		name string
		b    Board
		now  time.Time
		n    int
		want []Transition
	}{
		{"no schedule, no reset", DefaultBoard("a"), ms(time.Hour), 10, nil},
		{"a tournament", with(func(b *Board) {
			b.StartsAt, b.EndsAt, b.Grace = At(t0), At(ms(time.Hour)), Duration(time.Minute)
		}), ms(2 * time.Hour), 10, []Transition{
			{At: t0}, {At: ms(time.Hour)}, {At: ms(time.Hour + time.Minute), Final: true},
		}},
		{"a tournament before its end", with(func(b *Board) {
			b.StartsAt, b.EndsAt, b.Grace = At(t0), At(ms(time.Hour)), Duration(time.Minute)
		}), ms(time.Hour - time.Millisecond), 10, []Transition{{At: t0}}},
		{"the last n", with(func(b *Board) {
			b.StartsAt, b.EndsAt, b.Grace = At(t0), At(ms(time.Hour)), Duration(time.Minute)
		}), ms(2 * time.Hour), 1, []Transition{{At: ms(time.Hour + time.Minute), Final: true}}},
		{"periods without grace: a start and a final at once", with(func(b *Board) { b.Reset = "15m" }),
			ms(31 * time.Minute), 2, []Transition{
				{At: ms(15 * time.Minute), Final: true, FinalPeriod: 202612011080},
				{At: ms(30 * time.Minute), Final: true, FinalPeriod: 202612011095},
			}},
		{"periods with grace", with(func(b *Board) { b.Reset = "15m"; b.Grace = Duration(time.Minute) }),
			ms(31 * time.Minute), 3, []Transition{
				{At: ms(16 * time.Minute), Final: true, FinalPeriod: 202612011080},
				{At: ms(30 * time.Minute)},
				{At: ms(31 * time.Minute), Final: true, FinalPeriod: 202612011095},
			}},
		{"no final before the start", with(func(b *Board) { b.Reset = "15m"; b.StartsAt = At(ms(5 * time.Minute)) }),
			ms(16 * time.Minute), 4, []Transition{
				// Every period start changes the board frame's period, as R19
				// says, scheduled or not; the one before the start is never final.
				{At: ms(-15 * time.Minute)}, {At: t0}, {At: ms(5 * time.Minute)},
				{At: ms(15 * time.Minute), Final: true, FinalPeriod: 202612011080},
			}},
		{"a long grace", with(func(b *Board) { b.Reset = "1m"; b.Grace = Duration(90 * time.Second) }),
			ms(5*time.Minute + 30*time.Second), 2, []Transition{
				{At: ms(5 * time.Minute)},
				{At: ms(5*time.Minute + 30*time.Second), Final: true, FinalPeriod: 202612011083},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.b.Transitions(tc.now, tc.n)
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				w := tc.want[i]
				if !got[i].At.Equal(w.At) || got[i].Final != w.Final || (w.Final && w.FinalPeriod != 0 && got[i].FinalPeriod != w.FinalPeriod) {
					t.Fatalf("transition %d = %+v, want %+v (all: %+v)", i, got[i], w, got)
				}
			}
			for _, x := range got {
				if tc.b.PhaseAt(x.At.Add(-time.Millisecond)) == tc.b.PhaseAt(x.At) {
					t.Fatalf("%s is no change of phase", x.At)
				}
			}
		})
	}
}

func with(mut func(*Board)) Board {
	b := DefaultBoard("b")
	mut(&b)
	return b
}

func TestPhaseAt(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)
	b := with(func(b *Board) {
		b.Reset = "15m"
		b.StartsAt, b.EndsAt, b.Grace = At(t0), At(t0.Add(time.Hour)), Duration(time.Minute)
	})
	for _, tc := range []struct {
		at   time.Duration
		want Phase
	}{
		{-time.Minute, Phase{State: Scheduled, Period: 202612011065}},
		{0, Phase{State: Open, Period: 202612011080}},
		{15*time.Minute + 59*time.Second, Phase{State: Open, Period: 202612011095}},
		{16 * time.Minute, Phase{State: Open, Period: 202612011095, Final: 202612011080, HasFinal: true}},
		{time.Hour, Phase{State: Closing, Period: 202612011140, Final: 202612011110, HasFinal: true}},
		{time.Hour + time.Minute, Phase{State: Final, Period: 202612011140, Final: 202612011125, HasFinal: true}},
	} {
		if got := b.PhaseAt(t0.Add(tc.at)); got != tc.want {
			t.Errorf("PhaseAt(+%s) = %+v, want %+v", tc.at, got, tc.want)
		}
	}
}

func TestStreamMarkOf(t *testing.T) {
	t.Parallel()
	s := Stream{Marks: []Mark{{At: 10, Seq: 3}, {At: 20, Seq: 3}, {At: 30, Seq: 7}}}
	for _, tc := range []struct {
		at  int64
		seq int64
		ok  bool
	}{{10, 3, true}, {20, 3, true}, {30, 7, true}, {15, 0, false}, {40, 0, false}, {0, 0, false}} {
		if seq, ok := s.MarkOf(time.UnixMilli(tc.at)); seq != tc.seq || ok != tc.ok {
			t.Errorf("MarkOf(%d) = %d, %v; want %d, %v", tc.at, seq, ok, tc.seq, tc.ok)
		}
	}
}

// NextTransition is the first of Transitions after a moment: stepping from
// one to the next walks the same list Transitions gives backwards.
func TestNextTransition(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)
	for _, b := range []Board{
		with(func(b *Board) { b.Reset = "15m"; b.Grace = Duration(time.Minute) }),
		with(func(b *Board) { b.Reset = "1m"; b.Grace = Duration(90 * time.Second) }),
		with(func(b *Board) {
			b.Reset = "15m"
			b.StartsAt, b.EndsAt, b.Grace = At(t0.Add(5*time.Minute)), At(t0.Add(time.Hour)), Duration(2*time.Minute)
		}),
		with(func(b *Board) { b.StartsAt, b.EndsAt = At(t0), At(t0.Add(time.Hour)) }),
		with(func(b *Board) { b.Reset = Daily; b.TZ = "Europe/Berlin"; b.Grace = Duration(time.Hour) }),
	} {
		end := t0.Add(3 * time.Hour)
		want := b.Transitions(end, 1000)
		var got []Transition
		for at := t0.Add(-2 * time.Hour); ; {
			at = b.NextTransition(at)
			if at.IsZero() || at.After(end) {
				break
			}
			got = append(got, Transition{At: at})
		}
		i := 0
		for i < len(want) && want[i].At.Before(t0.Add(-2*time.Hour).Add(time.Millisecond)) {
			i++
		}
		want = want[i:]
		if len(got) != len(want) {
			t.Fatalf("%s reset %s: stepped %d transitions, Transitions lists %d: %v vs %v", b.ID, b.Reset, len(got), len(want), got, want)
		}
		for k := range got {
			if !got[k].At.Equal(want[k].At) {
				t.Fatalf("%s reset %s: transition %d at %s, Transitions says %s", b.ID, b.Reset, k, got[k].At, want[k].At)
			}
		}
	}
	if next := with(func(b *Board) { b.EndsAt = At(t0) }).NextTransition(t0); !next.IsZero() {
		t.Fatalf("a board without reset past its end: next transition %s, want none", next)
	}
}
