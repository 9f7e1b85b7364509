package rank_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

func factNames(fs []rank.Fact) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Marker)
	}
	return strings.Join(out, " ")
}

// TestFacts: what the watch finds true, and for how long it is news.
func TestFacts(t *testing.T) {
	t0 := time.Date(2031, 3, 1, 12, 0, 0, 0, time.UTC)
	cup := rank.DefaultBoard("cup")
	cup.StartsAt, cup.EndsAt, cup.Grace = rank.At(t0), rank.At(t0.Add(time.Hour)), rank.Duration(time.Minute)
	ms := func(d time.Duration) string { return strconv.FormatInt(t0.Add(d).UnixMilli(), 10) }
	open, closing := "state|cup|open|"+ms(0), "state|cup|closing|"+ms(time.Hour)
	final := "state|cup|final|" + ms(time.Hour+time.Minute) + " final|cup|" + ms(time.Hour+time.Minute)
	for _, c := range []struct {
		at   time.Duration
		want string
	}{
		{-time.Second, ""},
		{0, open},
		{time.Hour, open + " " + closing},
		{time.Hour + time.Minute, open + " " + closing + " " + final},
		{25 * time.Hour, final},
		{26 * time.Hour, ""},
	} {
		if got := factNames(cup.Facts(t0.Add(c.at))); got != c.want {
			t.Errorf("cup at %s: %q, want %q", c.at, got, c.want)
		}
	}

	daily := rank.DefaultBoard("daily")
	daily.Reset, daily.Grace = rank.Daily, rank.Duration(2*time.Hour)
	day := time.Date(2031, 3, 2, 0, 0, 0, 0, time.UTC)
	yesterday := rank.PeriodAt(daily, day.Add(-time.Hour)).Index
	before := rank.PeriodAt(daily, day.Add(-25*time.Hour)).Index
	for _, c := range []struct {
		at   time.Duration
		want int64
	}{
		{time.Hour, before}, // yesterday is still in its grace
		{2 * time.Hour, yesterday},
	} {
		fs := daily.Facts(day.Add(c.at))
		if len(fs) != 1 || fs[0].Event != rank.EventPeriodFinal || fs[0].Period != c.want || !fs[0].SkipEmpty {
			t.Errorf("daily at +%s: %+v, want period.final of %d", c.at, fs, c.want)
		}
	}
}

// TestNextFact: a watcher's wake-up time is the first moment a fact it
// has not seen can be listed: none appears before it, one does at it.
func TestNextFact(t *testing.T) {
	t0 := time.Date(2031, 3, 1, 12, 0, 0, 0, time.UTC)
	cup := rank.DefaultBoard("cup")
	cup.StartsAt, cup.EndsAt, cup.Grace = rank.At(t0), rank.At(t0.Add(time.Hour)), rank.Duration(time.Minute)
	daily := rank.DefaultBoard("daily")
	daily.Reset, daily.Grace = rank.Daily, rank.Duration(2*time.Hour)
	long := rank.DefaultBoard("long") // a grace longer than its period
	long.Reset, long.Grace = rank.Hourly, rank.Duration(150*time.Minute)
	season := rank.DefaultBoard("season")
	season.Reset, season.StartsAt, season.EndsAt = rank.Daily, rank.At(t0), rank.At(t0.Add(50*time.Hour))
	set := func(fs []rank.Fact) map[string]bool {
		m := map[string]bool{}
		for _, f := range fs {
			m[f.Marker] = true
		}
		return m
	}
	for _, b := range []rank.Board{cup, daily, long, season} {
		// Every 7 minutes, and from one next fact to the next.
		var times []time.Time
		for at := t0.Add(-2 * time.Hour); at.Before(t0.Add(60 * time.Hour)); at = at.Add(7 * time.Minute) {
			times = append(times, at)
		}
		for at := t0.Add(-2 * time.Hour); !at.IsZero() && at.Before(t0.Add(60*time.Hour)); at = b.NextFact(at) {
			times = append(times, at)
		}
		for _, at := range times {
			next := b.NextFact(at)
			if next.IsZero() {
				if !b.EndsAt.IsZero() && at.Before(b.FinalAt()) {
					t.Fatalf("%s at %s: no next fact before its end", b.ID, at)
				}
				continue
			}
			if !next.After(at) {
				t.Fatalf("%s at %s: next %s not after", b.ID, at, next)
			}
			seen := set(b.Facts(at))
			for m := range set(b.Facts(next.Add(-time.Millisecond))) {
				if !seen[m] {
					t.Fatalf("%s at %s: %s appeared before the next fact %s", b.ID, at, m, next)
				}
			}
			fresh := false
			for m := range set(b.Facts(next)) {
				fresh = fresh || !seen[m]
			}
			if !fresh {
				t.Fatalf("%s at %s: nothing new at the next fact %s", b.ID, at, next)
			}
		}
	}
}

// TestFinalStandings: a final event's standings are the board's standings
// count of the ranking, and its rewards go to every rank a range names,
// past the standings too.
func TestFinalStandings(t *testing.T) {
	b := rank.DefaultBoard("cup")
	b.Standings = 2
	b.Rewards, _ = rank.RewardsOf(rank.Reward{From: 1, To: 1, Reward: "gold"}, rank.Reward{From: 3, To: 4, Reward: "pin"})
	var entries []rank.Entry
	for i := range b.FinalReach() {
		entries = append(entries, rank.Entry{Rank: int64(i + 1), Member: "m" + strconv.Itoa(i+1)})
	}
	standings, awards := b.FinalStandings(entries)
	if len(standings) != 2 || standings[1].Member != "m2" {
		t.Fatalf("standings %+v, want m1 and m2", standings)
	}
	want := []rank.Award{{Member: "m1", Reward: "gold"}, {Member: "m3", Reward: "pin"}, {Member: "m4", Reward: "pin"}}
	if !slices.Equal(awards, want) {
		t.Fatalf("awards %+v, want %+v", awards, want)
	}
	if standings, awards := b.FinalStandings(nil); standings == nil || awards == nil {
		t.Fatal("no entries: standings and rewards must be [] on the wire, not null")
	}
}
