package ranktest

// max_submissions under moderation (R18 with §7): the limit counts events
// applied, not entries, so neither removing a member's entry nor banning
// and lifting gives it new submissions; an event refused as banned is not
// applied and so does not count.

import (
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

func testMaxSubmissionsModeration(t *testing.T, f Factory) {
	anchor := skewedAnchor()
	clk := NewClock(anchor)
	s := f(t, clk.Now)
	mod := modOf(t, s)
	ctx := t.Context()
	b := put(t, s, board("rt-limitmod", func(b *rank.Board) {
		b.Reset = "1h"
		b.Grace = rank.Duration(10 * time.Minute)
		b.MaxSubmissions = 2
	}))
	var g ids
	cur := rank.PeriodAt(b, anchor)

	// Removal from the current period: the two events stay counted.
	apply(t, s, delta(b.ID, g.next(), "ann", 5))
	apply(t, s, delta(b.ID, g.next(), "ann", 6))
	if err := mod.RemoveMember(ctx, b.ID, "ann", ""); err != nil {
		t.Fatalf("RemoveMember: %v", err)
	}
	applyErr(t, s, delta(b.ID, g.next(), "ann", 1), rank.ErrLimitReached)
	wantTop(t, s, b.ID)

	// A ban: refused events do not count; lifting it gives none back.
	apply(t, s, delta(b.ID, g.next(), "bob", 7))
	if _, err := mod.BanMember(ctx, b.ID, rank.Ban{Member: "bob", Reason: "check", By: "admin-1"}); err != nil {
		t.Fatalf("BanMember: %v", err)
	}
	applyErr(t, s, delta(b.ID, g.next(), "bob", 1), rank.ErrBanned)
	applyErr(t, s, delta(b.ID, g.next(), "bob", 1), rank.ErrBanned)
	if err := mod.LiftBan(ctx, b.ID, "bob"); err != nil {
		t.Fatalf("LiftBan: %v", err)
	}
	apply(t, s, delta(b.ID, g.next(), "bob", 3)) // the second of two
	applyErr(t, s, delta(b.ID, g.next(), "bob", 1), rank.ErrLimitReached)
	wantTop(t, s, b.ID, ent(1, "bob", 10))

	// Banned, removed while banned, lifted: still at the limit.
	if _, err := mod.BanMember(ctx, b.ID, rank.Ban{Member: "bob", Reason: "again", By: "admin-1"}); err != nil {
		t.Fatalf("BanMember: %v", err)
	}
	if err := mod.RemoveMember(ctx, b.ID, "bob", ""); err != nil {
		t.Fatalf("RemoveMember of a banned member: %v", err)
	}
	if err := mod.LiftBan(ctx, b.ID, "bob"); err != nil {
		t.Fatalf("LiftBan: %v", err)
	}
	applyErr(t, s, delta(b.ID, g.next(), "bob", 1), rank.ErrLimitReached)
	wantTop(t, s, b.ID)

	// A global ban and its lift keep the count too.
	apply(t, s, delta(b.ID, g.next(), "cy", 4))
	apply(t, s, delta(b.ID, g.next(), "cy", 4))
	if _, err := mod.PutGlobalBan(ctx, rank.Ban{Member: "cy", Reason: "global", By: "admin-1"}); err != nil {
		t.Fatalf("PutGlobalBan: %v", err)
	}
	if err := mod.LiftGlobalBan(ctx, "cy"); err != nil {
		t.Fatalf("LiftGlobalBan: %v", err)
	}
	applyErr(t, s, delta(b.ID, g.next(), "cy", 1), rank.ErrLimitReached)
	wantTop(t, s, b.ID, ent(1, "cy", 8))

	// The previous period, within its grace: removing the entry there
	// keeps that period's count, and the current period's count is its own.
	clk.Set(cur.End.Add(time.Minute))
	late := cur.End.Add(-time.Second)
	if err := mod.RemoveMember(ctx, b.ID, "cy", "previous"); err != nil {
		t.Fatalf("RemoveMember previous: %v", err)
	}
	applyErr(t, s, at(delta(b.ID, g.next(), "cy", 1), late), rank.ErrLimitReached)
	apply(t, s, delta(b.ID, g.next(), "cy", 9))
	apply(t, s, delta(b.ID, g.next(), "cy", 9))
	applyErr(t, s, delta(b.ID, g.next(), "cy", 1), rank.ErrLimitReached)
	wantTop(t, s, b.ID, ent(1, "cy", 18))
	wantEntries(t, "previous period after its removal", all(t, s, b.ID, "previous").Entries)
}
