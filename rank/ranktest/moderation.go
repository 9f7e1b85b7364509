package ranktest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// modOf is the store's moderation side (§7).
func modOf(_ *testing.T, s rank.Store) rank.Moderation { return s }

// hidden checks that member is absent from every read of period p:
// pages, total, Ranks (its own and others' around).
func hidden(t *testing.T, s rank.Store, boardID string, p rank.PeriodSel, member string, others []string, want []rank.Entry) {
	t.Helper()
	pg := all(t, s, boardID, p)
	wantEntries(t, fmt.Sprintf("top of %s period %q with %s banned", boardID, p, member), pg.Entries, want...)
	if pg.Total != int64(len(want)) {
		t.Fatalf("top of %s period %q: total %d, want %d", boardID, p, pg.Total, len(want))
	}
	r := ranks(t, s, boardID, p, 25, append([]string{member}, others...)...)
	if r.Members[0].Found {
		t.Fatalf("Ranks of banned %s in period %q: %+v", member, p, r.Members[0])
	}
	for _, mr := range r.Members[1:] {
		for _, e := range mr.Around {
			if e.Member == member {
				t.Fatalf("banned %s around %s in period %q: %s", member, mr.Member, p, fmtEntries(mr.Around))
			}
		}
	}
}

// testBans: a ban hides the member from every read of every kept period
// (the others close up), refuses its events with nothing changed (a retry
// of an event applied before the ban is still its duplicate), is listed,
// and lifting it restores the exact scores and tie order; bad input is
// refused and changes nothing.
func testBans(t *testing.T, f Factory) {
	anchor := skewedAnchor()
	clk := NewClock(anchor)
	s := f(t, clk.Now)
	mod := modOf(t, s)
	ctx := t.Context()
	b := put(t, s, board("rt-ban", func(b *rank.Board) { b.Reset = "1h" }))
	var g ids
	cur := rank.PeriodAt(b, anchor)
	// The previous period: tied scores, cheat reached 10 before bob.
	clk.Set(cur.Start.Add(-time.Minute))
	apply(t, s, delta(b.ID, g.next(), "ann", 20))
	apply(t, s, delta(b.ID, g.next(), "cheat", 10))
	apply(t, s, delta(b.ID, g.next(), "bob", 10))
	clk.Set(anchor)
	early := delta(b.ID, g.next(), "cheat", 50)
	apply(t, s, delta(b.ID, g.next(), "bob", 30))
	apply(t, s, early)
	apply(t, s, delta(b.ID, g.next(), "ann", 30)) // ties bob, who reached 30 first
	wantPrev := []rank.Entry{ent(1, "ann", 20), ent(2, "cheat", 10), ent(3, "bob", 10)}
	wantCur := []rank.Entry{ent(1, "cheat", 50), ent(2, "bob", 30), ent(3, "ann", 30)}
	wantEntries(t, "previous before the ban", all(t, s, b.ID, "previous").Entries, wantPrev...)
	wantTop(t, s, b.ID, wantCur...)

	ban, err := mod.BanMember(ctx, b.ID, rank.Ban{Member: "cheat", Reason: "aimbot", By: "admin-1"})
	if err != nil {
		t.Fatalf("BanMember: %v", err)
	}
	if !ban.At.Equal(anchor) || ban.Member != "cheat" || ban.Reason != "aimbot" || !ban.Until.IsZero() {
		t.Fatalf("BanMember returned %+v, want at %s", ban, anchor)
	}
	hidden(t, s, b.ID, "", "cheat", []string{"ann", "bob"}, []rank.Entry{ent(1, "bob", 30), ent(2, "ann", 30)})
	hidden(t, s, b.ID, "previous", "cheat", []string{"ann", "bob"}, []rank.Entry{ent(1, "ann", 20), ent(2, "bob", 10)})
	if n, err := s.Count(ctx, b.ID); err != nil || n != 2 {
		t.Fatalf("Count with a ban: %d, %v; want 2", n, err)
	}
	bans, err := mod.Bans(ctx, b.ID)
	if err != nil || len(bans) != 1 || bans[0].Member != "cheat" || bans[0].Reason != "aimbot" || !bans[0].At.Equal(anchor) || bans[0].By != "admin-1" {
		t.Fatalf("Bans = %+v, %v", bans, err)
	}

	// Its events: banned, nothing changed; a retry of one applied before
	// the ban is answered as the duplicate it is.
	before := snapshot(t, s, b.ID)
	applyErr(t, s, delta(b.ID, g.next(), "cheat", 1000), rank.ErrBanned)
	if r := apply(t, s, early); !r.Duplicate || r.Score != 50 {
		t.Fatalf("retry of an event applied before the ban: %+v", r)
	}
	if after := snapshot(t, s, b.ID); after != before {
		t.Fatalf("a banned member's event changed the board:\n%s\nwant\n%s", after, before)
	}
	// Banning again replaces the record, still hidden.
	if _, err := mod.BanMember(ctx, b.ID, rank.Ban{Member: "cheat", Reason: "again"}); err != nil {
		t.Fatalf("BanMember again: %v", err)
	}
	hidden(t, s, b.ID, "", "cheat", []string{"ann"}, []rank.Entry{ent(1, "bob", 30), ent(2, "ann", 30)})

	// Bad input: the documented error, nothing changed.
	bad := []struct {
		board string
		ban   rank.Ban
		want  error
	}{
		{"rt-ban-none", rank.Ban{Member: "ann"}, rank.ErrUnknownBoard},
		{"bad board!", rank.Ban{Member: "ann"}, rank.ErrInvalidBoard},
		{b.ID, rank.Ban{Member: "bad member"}, rank.ErrInvalidMember},
		{b.ID, rank.Ban{Member: "ann", Until: anchor}, rank.ErrInvalidBan},
		{b.ID, rank.Ban{Member: "ann", Until: anchor.Add(-time.Hour)}, rank.ErrInvalidBan},
		{b.ID, rank.Ban{Member: "ann", Reason: "a\nb"}, rank.ErrInvalidBan},
		{b.ID, rank.Ban{Member: "ann", Reason: strings.Repeat("é", rank.MaxReasonChars+1)}, rank.ErrInvalidBan},
	}
	for _, c := range bad {
		if _, err := mod.BanMember(ctx, c.board, c.ban); !errors.Is(err, c.want) {
			t.Errorf("BanMember(%s, %+v) = %v, want %v", c.board, c.ban, err, c.want)
		}
	}
	if after := snapshot(t, s, b.ID); after != before {
		t.Fatalf("bad bans changed the board:\n%s\nwant\n%s", after, before)
	}
	if err := mod.LiftBan(ctx, b.ID, "ann"); !errors.Is(err, rank.ErrNoBan) {
		t.Fatalf("LiftBan of a member without one: %v, want ErrNoBan", err)
	}
	if err := mod.LiftBan(ctx, "rt-ban-none", "ann"); !errors.Is(err, rank.ErrUnknownBoard) {
		t.Fatalf("LiftBan on an unknown board: %v", err)
	}
	if _, err := mod.Bans(ctx, "rt-ban-none"); !errors.Is(err, rank.ErrUnknownBoard) {
		t.Fatalf("Bans of an unknown board: %v", err)
	}

	// Lifting restores the exact scores and tie order in every period.
	if err := mod.LiftBan(ctx, b.ID, "cheat"); err != nil {
		t.Fatalf("LiftBan: %v", err)
	}
	wantTop(t, s, b.ID, wantCur...)
	wantEntries(t, "previous after the lift", all(t, s, b.ID, "previous").Entries, wantPrev...)
	if mr := one(t, s, b.ID, "cheat", 1); !mr.Found || mr.Rank != 1 || mr.Score != 50 {
		t.Fatalf("Ranks of cheat after the lift: %+v", mr)
	}
	if bans, err := mod.Bans(ctx, b.ID); err != nil || len(bans) != 0 {
		t.Fatalf("Bans after the lift = %+v, %v", bans, err)
	}
	if r := apply(t, s, delta(b.ID, g.next(), "cheat", 1)); r.Score != 51 || r.Rank != 1 || r.PrevRank != 1 {
		t.Fatalf("cheat's event after the lift: %+v", r)
	}
	// A shared-tie board keeps ties too.
	sb := put(t, s, board("rt-ban-shared", func(b *rank.Board) { b.Tiebreak = rank.Shared }))
	apply(t, s, delta(sb.ID, g.next(), "x", 5))
	apply(t, s, delta(sb.ID, g.next(), "y", 5))
	apply(t, s, delta(sb.ID, g.next(), "z", 9))
	if _, err := mod.BanMember(ctx, sb.ID, rank.Ban{Member: "z"}); err != nil {
		t.Fatalf("BanMember: %v", err)
	}
	// Equal scores list by member id in descending byte order.
	wantTop(t, s, sb.ID, ent(1, "y", 5), ent(1, "x", 5))
	if err := mod.LiftBan(ctx, sb.ID, "z"); err != nil {
		t.Fatalf("LiftBan: %v", err)
	}
	wantTop(t, s, sb.ID, ent(1, "z", 9), ent(2, "y", 5), ent(2, "x", 5))
}

// testBanExpiry: a ban with until hides the member until the store's
// clock reaches it; then, with no write in between, every read shows it
// again with its score, its events apply and the list forgets the ban.
// Each read path is the first to see the expiry once.
func testBanExpiry(t *testing.T, f Factory) {
	// Five minutes into an hour: the ban's until (10 minutes later) falls
	// in the same hourly period whatever the time of day the test runs.
	anchor := skewedAnchor().Truncate(time.Hour).Add(5 * time.Minute)
	clk := NewClock(anchor)
	s := f(t, clk.Now)
	mod := modOf(t, s)
	ctx := t.Context()
	var g ids
	first := map[string]func(id string){
		"top": func(id string) {
			wantTop(t, s, id, ent(1, "cheat", 50), ent(2, "ann", 20))
		},
		"ranks": func(id string) {
			if mr := one(t, s, id, "ann", 1); !mr.Found || mr.Rank != 2 || len(mr.Around) != 2 {
				t.Fatalf("Ranks of ann after the ban's until: %+v", mr)
			}
		},
		"count": func(id string) {
			if n, err := s.Count(ctx, id); err != nil || n != 2 {
				t.Fatalf("Count after the ban's until: %d, %v", n, err)
			}
		},
		"apply": func(id string) {
			if r := apply(t, s, delta(id, g.next(), "cheat", 1)); r.Score != 51 || r.PrevRank != 1 {
				t.Fatalf("cheat's first event after the ban's until: %+v", r)
			}
		},
		"other's apply": func(id string) {
			if r := apply(t, s, delta(id, g.next(), "ann", 1)); r.Score != 21 || r.Rank != 2 {
				t.Fatalf("ann's first event after the ban's until: %+v", r)
			}
		},
	}
	for path, read := range first {
		clk.Set(anchor)
		id := "rt-banexp-" + strings.ReplaceAll(strings.ReplaceAll(path, " ", "-"), "'", "")
		b := put(t, s, board(id, func(b *rank.Board) { b.Reset = "1h" }))
		apply(t, s, delta(b.ID, g.next(), "ann", 20))
		apply(t, s, delta(b.ID, g.next(), "cheat", 50))
		until := anchor.Add(10 * time.Minute)
		if _, err := mod.BanMember(ctx, b.ID, rank.Ban{Member: "cheat", Until: until}); err != nil {
			t.Fatalf("BanMember: %v", err)
		}
		clk.Set(until.Add(-time.Millisecond))
		hidden(t, s, b.ID, "", "cheat", []string{"ann"}, []rank.Entry{ent(1, "ann", 20)})
		applyErr(t, s, delta(b.ID, g.next(), "cheat", 1), rank.ErrBanned)
		clk.Set(until)
		read(b.ID)
		pg := all(t, s, b.ID, "")
		if len(pg.Entries) != 2 || pg.Entries[0].Member != "cheat" {
			t.Fatalf("%s first: after the until, top %s", path, fmtEntries(pg.Entries))
		}
		if bans, err := mod.Bans(ctx, b.ID); err != nil || len(bans) != 0 {
			t.Fatalf("%s first: Bans after the until = %+v, %v", path, bans, err)
		}
		if err := mod.LiftBan(ctx, b.ID, "cheat"); !errors.Is(err, rank.ErrNoBan) {
			t.Fatalf("%s first: LiftBan after the until: %v, want ErrNoBan", path, err)
		}
	}
}

// testBanRace: events of one member from many goroutines race its ban
// (each goroutine goes on until it has sent 10 after seeing the ban
// returned): every event gets applied or banned, none is applied while
// banned (the score kept equals the applied count, every event sent after
// the ban returned is banned), and the lift restores that score.
func testBanRace(t *testing.T, f Factory) {
	s := f(t, nil)
	mod := modOf(t, s)
	b := put(t, s, board("rt-banrace", nil))
	var applied, banned, afterOK, sent atomic.Int64
	var after atomic.Bool
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i, post := 0, 0; post < 10; i++ {
				if after.Load() {
					post++
				}
				sent.Add(1)
				_, err := rank.ApplyWait(t.Context(), s, delta(b.ID, fmt.Sprintf("w%d-%d", w, i), "racer", 1))
				switch {
				case err == nil:
					applied.Add(1)
					if post > 0 {
						afterOK.Add(1)
					}
				case errors.Is(err, rank.ErrBanned):
					banned.Add(1)
				default:
					t.Errorf("racing apply: %v", err)
				}
			}
		}()
	}
	close(start)
	eventually(t, 10*time.Second, "some events applied before the ban", func() bool { return applied.Load() >= 40 })
	if _, err := mod.BanMember(t.Context(), b.ID, rank.Ban{Member: "racer"}); err != nil {
		t.Fatalf("BanMember: %v", err)
	}
	after.Store(true)
	wg.Wait()
	if applied.Load()+banned.Load() != sent.Load() || banned.Load() < 160 {
		t.Fatalf("racing: %d applied, %d banned of %d; want all, at least 160 banned", applied.Load(), banned.Load(), sent.Load())
	}
	if afterOK.Load() != 0 {
		t.Fatalf("%d events sent after the ban returned were applied", afterOK.Load())
	}
	wantTop(t, s, b.ID)
	if err := mod.LiftBan(t.Context(), b.ID, "racer"); err != nil {
		t.Fatalf("LiftBan: %v", err)
	}
	wantTop(t, s, b.ID, ent(1, "racer", applied.Load()))
}

// testRemoveMember: removal deletes the member's entry from one period
// (default current), hidden or not; its score is gone, the others close
// up, and a later event starts from nothing.
func testRemoveMember(t *testing.T, f Factory) {
	anchor := skewedAnchor()
	clk := NewClock(anchor)
	s := f(t, clk.Now)
	mod := modOf(t, s)
	ctx := t.Context()
	b := put(t, s, board("rt-remove", func(b *rank.Board) { b.Reset = "1h" }))
	var g ids
	cur := rank.PeriodAt(b, anchor)
	clk.Set(cur.Start.Add(-time.Minute))
	apply(t, s, delta(b.ID, g.next(), "ann", 5))
	apply(t, s, delta(b.ID, g.next(), "bob", 7))
	clk.Set(anchor)
	apply(t, s, delta(b.ID, g.next(), "ann", 10))
	apply(t, s, delta(b.ID, g.next(), "bob", 20))
	apply(t, s, delta(b.ID, g.next(), "cy", 15))

	if err := mod.RemoveMember(ctx, b.ID, "bob", ""); err != nil {
		t.Fatalf("RemoveMember: %v", err)
	}
	wantTop(t, s, b.ID, ent(1, "cy", 15), ent(2, "ann", 10))
	wantEntries(t, "previous after a removal from current", all(t, s, b.ID, "previous").Entries, ent(1, "bob", 7), ent(2, "ann", 5))
	if err := mod.RemoveMember(ctx, b.ID, "bob", ""); !errors.Is(err, rank.ErrNoEntry) {
		t.Fatalf("RemoveMember twice: %v, want ErrNoEntry", err)
	}
	if err := mod.RemoveMember(ctx, b.ID, "ann", "previous"); err != nil {
		t.Fatalf("RemoveMember previous: %v", err)
	}
	wantEntries(t, "previous after its removal", all(t, s, b.ID, "previous").Entries, ent(1, "bob", 7))
	if r := apply(t, s, delta(b.ID, g.next(), "bob", 1)); r.Score != 1 || r.PrevRank != 0 {
		t.Fatalf("bob's event after its removal: %+v (its score must start over)", r)
	}

	// A banned member's hidden entry can be removed: the lift shows nothing.
	if _, err := mod.BanMember(ctx, b.ID, rank.Ban{Member: "cy"}); err != nil {
		t.Fatalf("BanMember: %v", err)
	}
	if err := mod.RemoveMember(ctx, b.ID, "cy", "current"); err != nil {
		t.Fatalf("RemoveMember of a banned member: %v", err)
	}
	if err := mod.LiftBan(ctx, b.ID, "cy"); err != nil {
		t.Fatalf("LiftBan: %v", err)
	}
	wantTop(t, s, b.ID, ent(1, "ann", 10), ent(2, "bob", 1))

	before := snapshot(t, s, b.ID)
	for _, c := range []struct {
		board, member string
		sel           rank.PeriodSel
		want          error
	}{
		{b.ID, "nobody", "", rank.ErrNoEntry},
		{b.ID, "bad member", "", rank.ErrInvalidMember},
		{b.ID, "ann", "bogus", rank.ErrBadRequest},
		{"rt-remove-none", "ann", "", rank.ErrUnknownBoard},
	} {
		if err := mod.RemoveMember(ctx, c.board, c.member, c.sel); !errors.Is(err, c.want) {
			t.Errorf("RemoveMember(%s, %s, %q) = %v, want %v", c.board, c.member, c.sel, err, c.want)
		}
	}
	if after := snapshot(t, s, b.ID); after != before {
		t.Fatalf("bad removals changed the board:\n%s\nwant\n%s", after, before)
	}
}

// testGlobalBans: a global ban hides the member on every board that
// exists and refuses its events on boards created later; a board's own
// ban and a global one are independent (the member shows again only when
// both are gone).
func testGlobalBans(t *testing.T, f Factory) {
	s := f(t, nil)
	mod := modOf(t, s)
	ctx := t.Context()
	var g ids
	old := put(t, s, board("rt-gban-old", nil))
	apply(t, s, delta(old.ID, g.next(), "rtg-cheat", 9))
	apply(t, s, delta(old.ID, g.next(), "rtg-ann", 3))

	ban, err := mod.PutGlobalBan(ctx, rank.Ban{Member: "rtg-cheat", Reason: "everywhere", By: "root"})
	if err != nil {
		t.Fatalf("PutGlobalBan: %v", err)
	}
	hidden(t, s, old.ID, "", "rtg-cheat", []string{"rtg-ann"}, []rank.Entry{ent(1, "rtg-ann", 3)})
	nb := put(t, s, board("rt-gban-new", nil))
	applyErr(t, s, delta(nb.ID, g.next(), "rtg-cheat", 1), rank.ErrBanned)
	applyErr(t, s, delta(old.ID, g.next(), "rtg-cheat", 1), rank.ErrBanned)
	apply(t, s, delta(nb.ID, g.next(), "rtg-ann", 1))
	gl, err := mod.GlobalBans(ctx)
	if err != nil || len(gl) != 1 || gl[0].Member != "rtg-cheat" || gl[0].Reason != "everywhere" || !gl[0].At.Equal(ban.At) {
		t.Fatalf("GlobalBans = %+v, %v", gl, err)
	}
	if bans, err := mod.Bans(ctx, old.ID); err != nil || len(bans) != 0 {
		t.Fatalf("a board's own bans list a global one: %+v, %v", bans, err)
	}

	// Both kinds on one member: it shows again only when both are gone.
	if _, err := mod.BanMember(ctx, old.ID, rank.Ban{Member: "rtg-cheat"}); err != nil {
		t.Fatalf("BanMember: %v", err)
	}
	if err := mod.LiftGlobalBan(ctx, "rtg-cheat"); err != nil {
		t.Fatalf("LiftGlobalBan: %v", err)
	}
	hidden(t, s, old.ID, "", "rtg-cheat", []string{"rtg-ann"}, []rank.Entry{ent(1, "rtg-ann", 3)})
	apply(t, s, delta(nb.ID, g.next(), "rtg-cheat", 1)) // the new board had only the global one
	if err := mod.LiftBan(ctx, old.ID, "rtg-cheat"); err != nil {
		t.Fatalf("LiftBan: %v", err)
	}
	wantTop(t, s, old.ID, ent(1, "rtg-cheat", 9), ent(2, "rtg-ann", 3))
	if err := mod.LiftGlobalBan(ctx, "rtg-cheat"); !errors.Is(err, rank.ErrNoBan) {
		t.Fatalf("LiftGlobalBan twice: %v, want ErrNoBan", err)
	}
	if gl, err := mod.GlobalBans(ctx); err != nil || len(gl) != 0 {
		t.Fatalf("GlobalBans after the lift = %+v, %v", gl, err)
	}
	if _, err := mod.PutGlobalBan(ctx, rank.Ban{Member: "bad member"}); !errors.Is(err, rank.ErrInvalidMember) {
		t.Fatalf("PutGlobalBan of a bad member: %v", err)
	}
	if _, err := mod.PutGlobalBan(ctx, rank.Ban{Member: "rtg-x", Reason: "\x00"}); !errors.Is(err, rank.ErrInvalidBan) {
		t.Fatalf("PutGlobalBan of a bad reason: %v", err)
	}
	if gl, err := mod.GlobalBans(ctx); err != nil || len(gl) != 0 {
		t.Fatalf("bad global bans were stored: %+v, %v", gl, err)
	}
}
