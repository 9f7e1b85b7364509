package ranktest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// Differential applies the same random event stream to a and b and fails at
// the first difference: every result and error kind, then every page and
// every member's rank with its neighbours. It uses boards named "df-…" of
// every order × mode × tiebreak (without periods, so the two stores' clocks
// do not matter), deleting them first so stores may be reused.
func Differential(t *testing.T, a, b rank.Store, seed int64, events int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	var boards []rank.Board
	for _, o := range []rank.Order{rank.Desc, rank.Asc} {
		for _, m := range []rank.Mode{rank.Incr, rank.Best, rank.Set} {
			for _, tb := range []rank.Tiebreak{rank.First, rank.Last, rank.Shared} {
				id := fmt.Sprintf("df-%s-%s-%s", o, m, tb)
				boards = append(boards, board(id, func(b *rank.Board) {
					b.Order, b.Mode, b.Tiebreak = o, m, tb
					if len(boards)%3 == 0 {
						b.MaxDelta = 50
					}
				}))
			}
		}
	}
	for _, bd := range boards {
		resetBoard(t, a, b, bd)
	}
	members := []string{"Z", "a", "a0", "b", "B", "m:1", "m@2", "m-3", "m_4", "m.5", "zz"}
	for i := range 14 {
		members = append(members, fmt.Sprintf("p%02d", i))
	}
	names := []string{"Ann", "Bob", "Cy ☺"}

	var hist, pending []rank.Event
	burst := 1
	for i := range events {
		bd := boards[rng.IntN(len(boards))]
		e := rank.Event{Board: bd.ID, ID: fmt.Sprintf("e%d", i), Member: members[rng.IntN(len(members))], Op: rank.OpDelta}
		if bd.Mode != rank.Incr {
			e.Op = rank.OpValue
		}
		switch r := rng.IntN(100); {
		case r < 65:
			e.Amount = int64(rng.IntN(13) - 3) // small numbers: ties everywhere
		case r < 75:
			e.Amount = int64(rng.IntN(2001) - 1000)
		case r < 82:
			e.Amount = int64(rng.IntN(11) + 45) // around max_delta
			if rng.IntN(2) == 0 {
				e.Amount = -e.Amount
			}
		case r < 92:
			e.Amount = rank.MaxScore - int64(rng.IntN(4)) // near the edge: out_of_range
			if rng.IntN(2) == 0 {
				e.Amount = -e.Amount
			}
		default:
			e.Amount = rank.MaxScore + 1 + int64(rng.IntN(3))
			if rng.IntN(2) == 0 {
				e.Amount = -e.Amount
			}
		}
		if rng.IntN(5) == 0 {
			e.Name = names[rng.IntN(len(names))]
		}
		switch r := rng.IntN(100); {
		case r < 2:
			e.Member = "bad member"
		case r < 4:
			e.Op = 3 - e.Op // delta on a value board and the reverse
		case r < 5:
			e.Board = "df-absent"
		case r < 6:
			e.ID = ""
		case r < 16 && len(hist) > 0: // an exact retry (its name may differ)
			name := e.Name
			e = hist[rng.IntN(len(hist))]
			e.Name = name
		case r < 22 && len(hist) > 0: // a reused id with another payload
			e.ID = hist[rng.IntN(len(hist))].ID
			e.Board = hist[rng.IntN(len(hist))].Board
		}
		if len(hist) < 4096 {
			hist = append(hist, e)
		} else {
			hist[rng.IntN(len(hist))] = e
		}
		// Events go out in bursts submitted without waiting, as a pipelining
		// connection sends them (a Redis lane batches them, several per
		// board in one script call); one submitter's order is kept, so
		// the results are those of applying them one by one.
		pending = append(pending, e)
		if len(pending) >= burst || (i+1)%1000 == 0 || i == events-1 {
			compareApplyMany(t, a, b, i+1-len(pending), pending)
			pending, burst = pending[:0], 1+rng.IntN(40)
		}
		if (i+1)%1000 == 0 {
			for _, bd := range boards {
				compareBoard(t, a, b, bd.ID, members, rng.IntN(4), 1+rng.IntN(15))
			}
		}
	}
	for _, bd := range boards {
		compareBoard(t, a, b, bd.ID, members, rng.IntN(4), 1+rng.IntN(15))
	}
}

// ApplyScript decodes script into one board config and a short event
// sequence, applies it to both stores and compares every result and the
// final board: the body of a FuzzEquivalence target. It uses the board "fz",
// deleting it first, so stores may be reused across calls.
//
// Encoding: byte 0 picks the board (bit 0 order, bits 1-2 mode, bits 3-4
// tiebreak, bit 7 max_delta 50, bits 5-6 the around of the final reads);
// then every 3 bytes are one event: byte 0 bits 0-2 the member (7: invalid),
// bits 3-5 the kind (0 exact retry, 1 reused id with another payload, 2 the
// wrong op, else new), bit 6 a name, bit 7 an amount near ±2^53; byte 1 the
// amount as int8; byte 2 which earlier event a retry refers to.
func ApplyScript(t *testing.T, a, b rank.Store, script []byte) {
	t.Helper()
	if len(script) == 0 {
		return
	}
	h := script[0]
	script = script[1:]
	bd := board("fz", func(b *rank.Board) {
		b.Order = []rank.Order{rank.Desc, rank.Asc}[h&1]
		b.Mode = []rank.Mode{rank.Incr, rank.Best, rank.Set}[int(h>>1&3)%3]
		b.Tiebreak = []rank.Tiebreak{rank.First, rank.Last, rank.Shared}[int(h>>3&3)%3]
		if h&0x80 != 0 {
			b.MaxDelta = 50
		}
	})
	resetBoard(t, a, b, bd)
	members := []string{"a", "b", "c", "D", "e-1", "Zz", "a0", "bad member"}
	const maxEvents = 256
	var hist []rank.Event
	for i := 0; i+3 <= len(script) && i/3 < maxEvents; i += 3 {
		c0, c1, c2 := script[i], script[i+1], script[i+2]
		e := rank.Event{Board: bd.ID, ID: fmt.Sprintf("f%d", i/3), Member: members[c0&7], Op: rank.OpDelta, Amount: int64(int8(c1))}
		if bd.Mode != rank.Incr {
			e.Op = rank.OpValue
		}
		if c0&0x80 != 0 {
			e.Amount = rank.MaxScore - 3 + int64(c1&7) // up to 2^53+3: beyond is invalid_score
			if c1&0x80 != 0 {
				e.Amount = -e.Amount
			}
		}
		if c0&0x40 != 0 {
			e.Name = fmt.Sprintf("N%d", c2&3)
		}
		switch kind := c0 >> 3 & 7; {
		case kind == 0 && len(hist) > 0:
			name := e.Name
			e = hist[int(c2)%len(hist)]
			e.Name = name
		case kind == 1 && len(hist) > 0:
			e.ID = hist[int(c2)%len(hist)].ID
		case kind == 2:
			e.Op = 3 - e.Op
		}
		hist = append(hist, e)
		compareApply(t, a, b, i/3, e)
	}
	compareBoard(t, a, b, bd.ID, members[:7], int(h>>5&3), 3)
}

// resetBoard deletes the board from both stores (if present) and creates it.
func resetBoard(t *testing.T, a, b rank.Store, bd rank.Board) {
	t.Helper()
	for _, s := range []rank.Store{a, b} {
		if err := s.DeleteBoard(t.Context(), bd.ID); err != nil && !errors.Is(err, rank.ErrUnknownBoard) {
			t.Fatalf("DeleteBoard(%s): %v", bd.ID, err)
		}
		put(t, s, bd)
	}
}

func compareApply(t *testing.T, a, b rank.Store, i int, e rank.Event) {
	t.Helper()
	ra, ea := rank.ApplyWait(t.Context(), a, e)
	rb, eb := rank.ApplyWait(t.Context(), b, e)
	if ka, kb := Kind(ea), Kind(eb); ka != kb {
		t.Fatalf("event %d %+v: first store says %s (%v), second %s (%v)", i, e, ka, ea, kb, eb)
	}
	if ea == nil && ra != rb {
		t.Fatalf("event %d %+v:\nfirst store  %+v\nsecond store %+v", i, e, ra, rb)
	}
}

// compareApplyMany submits events to each store without waiting between
// them and compares the outcomes in order; first is the index of events[0].
func compareApplyMany(t *testing.T, a, b rank.Store, first int, events []rank.Event) {
	t.Helper()
	type outcome struct {
		r   rank.Result
		err error
	}
	submit := func(s rank.Store) []outcome {
		out := make([]outcome, len(events))
		var wg sync.WaitGroup
		wg.Add(len(events))
		for i, e := range events {
			s.Apply(t.Context(), e, func(r rank.Result, err error) {
				out[i] = outcome{r, err}
				wg.Done()
			})
		}
		wg.Wait()
		return out
	}
	oa, ob := submit(a), submit(b)
	for i, e := range events {
		ra, ea, rb, eb := oa[i].r, oa[i].err, ob[i].r, ob[i].err
		if ka, kb := Kind(ea), Kind(eb); ka != kb {
			t.Fatalf("event %d %+v: first store says %s (%v), second %s (%v)", first+i, e, ka, ea, kb, eb)
		}
		if ea == nil && ra != rb {
			t.Fatalf("event %d %+v:\nfirst store  %+v\nsecond store %+v", first+i, e, ra, rb)
		}
	}
}

// compareBoard reads the whole board from both stores, page by page, and
// every member (plus one absent) with `around` neighbours.
func compareBoard(t *testing.T, a, b rank.Store, id string, members []string, around, pageSize int) {
	t.Helper()
	ctx := t.Context()
	for off := 0; ; off += pageSize {
		pa, ea := a.Top(ctx, id, "", off, pageSize)
		pb, eb := b.Top(ctx, id, "", off, pageSize)
		if ea != nil || eb != nil {
			t.Fatalf("Top(%s, %d, %d): %v / %v", id, off, pageSize, ea, eb)
		}
		if pa.Total != pb.Total || pa.Seq != pb.Seq || pa.Period != pb.Period || pa.Offset != pb.Offset || pa.Board != pb.Board || !sameEntries(pa.Entries, pb.Entries) {
			t.Fatalf("Top(%s, %d, %d) differs:\nfirst  total %d seq %d %s\nsecond total %d seq %d %s",
				id, off, pageSize, pa.Total, pa.Seq, fmtEntries(pa.Entries), pb.Total, pb.Seq, fmtEntries(pb.Entries))
		}
		if int64(off) >= pa.Total {
			break
		}
	}
	ask := append(append([]string(nil), members...), "absent")
	ra, ea := a.Ranks(ctx, id, "", ask, around)
	rb, eb := b.Ranks(ctx, id, "", ask, around)
	if ea != nil || eb != nil {
		t.Fatalf("Ranks(%s): %v / %v", id, ea, eb)
	}
	if ra.Total != rb.Total || ra.Seq != rb.Seq || ra.Period != rb.Period || len(ra.Members) != len(ask) || len(rb.Members) != len(ask) {
		t.Fatalf("Ranks(%s) differs: %+v\n%+v", id, ra, rb)
	}
	for i := range ask {
		x, y := ra.Members[i], rb.Members[i]
		if x.Member != y.Member || x.Found != y.Found || x.Rank != y.Rank || x.Score != y.Score || x.Name != y.Name || !sameEntries(x.Around, y.Around) {
			t.Fatalf("Ranks(%s, %s, around %d) differs:\nfirst  %v %d %d %q %s\nsecond %v %d %d %q %s", id, ask[i], around,
				x.Found, x.Rank, x.Score, x.Name, fmtEntries(x.Around), y.Found, y.Rank, y.Score, y.Name, fmtEntries(y.Around))
		}
	}
	ca, ea := a.Count(ctx, id)
	cb, eb := b.Count(ctx, id)
	if ea != nil || eb != nil || ca != cb {
		t.Fatalf("Count(%s) = %d, %v / %d, %v", id, ca, ea, cb, eb)
	}
}

// DifferentialModeration is Differential with moderation (§7, R21) among
// the events: per-board and global bans with and without until, lifts,
// removals of entries, the clock moving past untils, and refused requests
// (bad member, until not in the future, unknown board). a and b must both
// run on clk. After every step the boards it may have changed (every board
// after a global ban, its lift or a clock move) are compared in full, with
// their ban lists; every result and error kind is compared as it comes.
// The boards ("dm-…", without periods) are deleted first, and global bans
// of members of this stream lifted, so stores may be reused.
func DifferentialModeration(t *testing.T, a, b rank.Store, clk *Clock, seed int64, steps int) {
	t.Helper()
	ma, mb := modOf(t, a), modOf(t, b)
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(uint64(seed), 0xba9))
	members := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for _, m := range members {
		_ = ma.LiftGlobalBan(ctx, m) // ErrNoBan on a fresh store
		_ = mb.LiftGlobalBan(ctx, m)
	}
	var boards []rank.Board
	modes := []rank.Mode{rank.Incr, rank.Best, rank.Set}
	for _, o := range []rank.Order{rank.Desc, rank.Asc} {
		for _, tb := range []rank.Tiebreak{rank.First, rank.Last, rank.Shared} {
			id := fmt.Sprintf("dm-%s-%s", o, tb)
			boards = append(boards, board(id, func(b *rank.Board) {
				b.Order, b.Tiebreak, b.Mode = o, tb, modes[len(boards)%3]
			}))
		}
	}
	for _, bd := range boards {
		resetBoard(t, a, b, bd)
	}
	compareAll := func() {
		t.Helper()
		for _, bd := range boards {
			compareBoard(t, a, b, bd.ID, members, rng.IntN(3), 1+rng.IntN(5))
			compareBans(t, ma, mb, bd.ID)
		}
		compareBans(t, ma, mb, "")
	}
	var hist []rank.Event
	for i := range steps {
		bd := boards[rng.IntN(len(boards))]
		member := members[rng.IntN(len(members))]
		what := ""
		var ea, eb error
		var ba, bb rank.Ban
		ban := rank.Ban{Member: member, Reason: fmt.Sprintf("r%d", i), By: "admin-" + fmt.Sprint(rng.IntN(3))}
		if rng.IntN(2) == 0 {
			ban.Until = clk.Now().Add(time.Duration(1+rng.IntN(15)) * time.Second)
		}
		switch r := rng.IntN(100); {
		case r < 66:
			e := rank.Event{Board: bd.ID, ID: fmt.Sprintf("m%d", i), Member: member, Op: rank.OpDelta, Amount: int64(rng.IntN(9) - 2)}
			if bd.Mode != rank.Incr {
				e.Op = rank.OpValue
			}
			if rng.IntN(4) == 0 {
				e.Name = []string{"Ann", "Bob"}[rng.IntN(2)]
			}
			if len(hist) > 0 && rng.IntN(8) == 0 { // an exact retry, perhaps of an event before a ban
				e = hist[rng.IntN(len(hist))]
				bd = boardOf(boards, e.Board)
			}
			hist = append(hist, e)
			compareApply(t, a, b, i, e)
			compareBoard(t, a, b, bd.ID, members, rng.IntN(3), 1+rng.IntN(5))
			continue
		case r < 75:
			what = "ban"
			ba, ea = ma.BanMember(ctx, bd.ID, ban)
			bb, eb = mb.BanMember(ctx, bd.ID, ban)
		case r < 82:
			what = "lift"
			ea, eb = ma.LiftBan(ctx, bd.ID, member), mb.LiftBan(ctx, bd.ID, member)
		case r < 85:
			what = "global ban"
			ba, ea = ma.PutGlobalBan(ctx, ban)
			bb, eb = mb.PutGlobalBan(ctx, ban)
		case r < 88:
			what = "global lift"
			ea, eb = ma.LiftGlobalBan(ctx, member), mb.LiftGlobalBan(ctx, member)
		case r < 94:
			what = "remove"
			ea, eb = ma.RemoveMember(ctx, bd.ID, member, ""), mb.RemoveMember(ctx, bd.ID, member, "")
		case r < 97:
			what = "refused ban"
			switch rng.IntN(3) {
			case 0:
				ban.Member = "bad member"
			case 1:
				ban.Until = clk.Now()
			default:
				bd = board("dm-absent", nil)
			}
			ba, ea = ma.BanMember(ctx, bd.ID, ban)
			bb, eb = mb.BanMember(ctx, bd.ID, ban)
			if ea == nil {
				t.Fatalf("step %d: %s %+v on %s accepted", i, what, ban, bd.ID)
			}
		default:
			what = "clock"
			clk.Advance(time.Duration(1+rng.IntN(5000)) * time.Millisecond)
		}
		if ka, kb := modKind(ea), modKind(eb); ka != kb {
			t.Fatalf("step %d: %s of %s on %s: first store says %s (%v), second %s (%v)", i, what, member, bd.ID, ka, ea, kb, eb)
		}
		if ea == nil && !sameBan(ba, bb) {
			t.Fatalf("step %d: %s of %s on %s:\nfirst store  %+v\nsecond store %+v", i, what, member, bd.ID, ba, bb)
		}
		switch what {
		case "global ban", "global lift", "clock":
			compareAll()
		default:
			if bd.ID != "dm-absent" {
				compareBoard(t, a, b, bd.ID, members, rng.IntN(3), 1+rng.IntN(5))
				compareBans(t, ma, mb, bd.ID)
			}
		}
	}
	compareAll()
}

func boardOf(boards []rank.Board, id string) rank.Board {
	for _, b := range boards {
		if b.ID == id {
			return b
		}
	}
	return rank.Board{ID: id}
}

// modKind is Kind with the moderation sentinels told apart.
func modKind(err error) string {
	switch {
	case errors.Is(err, rank.ErrNoBan):
		return "no_ban"
	case errors.Is(err, rank.ErrNoEntry):
		return "no_entry"
	case errors.Is(err, rank.ErrInvalidBan):
		return "invalid_ban"
	}
	return Kind(err)
}

func sameBan(x, y rank.Ban) bool {
	return x.Member == y.Member && x.Reason == y.Reason && x.By == y.By && x.Until.Equal(y.Until) && x.At.Equal(y.At)
}

// compareBans compares the board's ban list (board "" = the global list).
func compareBans(t *testing.T, a, b rank.Moderation, board string) {
	t.Helper()
	list := func(m rank.Moderation) ([]rank.Ban, error) {
		if board == "" {
			return m.GlobalBans(t.Context())
		}
		return m.Bans(t.Context(), board)
	}
	la, ea := list(a)
	lb, eb := list(b)
	if ea != nil || eb != nil {
		t.Fatalf("bans of %q: %v / %v", board, ea, eb)
	}
	same := len(la) == len(lb)
	for i := 0; same && i < len(la); i++ {
		same = sameBan(la[i], lb[i])
	}
	if !same {
		t.Fatalf("bans of %q differ:\nfirst  %+v\nsecond %+v", board, la, lb)
	}
}
