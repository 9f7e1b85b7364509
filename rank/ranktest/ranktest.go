// Package ranktest is the conformance suite every rank.Store engine passes:
// Run checks the contract subtest by subtest, RunApply the completion
// contract of Apply (done and the engine's sink), Differential and
// ApplyScript hold two engines equal on random (or fuzzed) event streams.
//
// Rules the suite pins down beyond rank.Store's doc comments, so both engines
// agree on them:
//
//   - An invalid board id is ErrInvalidBoard on every operation; a valid but
//     absent one is ErrUnknownBoard (DeleteBoard included).
//   - PutBoard validates and does not fill defaults; it returns the stored
//     config, equal to the one given.
//   - Seq is per board: +1 for every applied, non-duplicate event, even when
//     the score did not change; errors and duplicates do not consume one.
//     DeleteBoard removes the counter too: a re-created board starts at seq 1.
//   - Only an applied event records its id: an event that failed (any error)
//     may be re-sent with the same id and another payload.
//   - Ids are per (board, member) (R4 v1.1): two members' equal ids are two
//     events, neither a duplicate nor a conflict of the other.
//   - A member whose score does not change (incr by 0, best not improved, set
//     to the same value) keeps its tie position.
//   - Top: offset < 0 or limit < 0 is ErrBadRequest; limit 0 or an offset past
//     the end is an empty page with the right Total.
//   - Ranks: around < 0 is ErrBadRequest, an invalid member id is
//     ErrInvalidMember, a valid absent one is Found false.
//   - Reading a period index that holds no data is an empty page, not an error.
//
// Subtests run in parallel, each on its own store from the Factory and with
// its own board ids (prefix "rt-"), so a factory may hand out stores that
// share one server as long as it does not flush it between subtests. The
// store's Close may be called by a subtest before the factory's cleanup runs:
// the cleanup must tolerate a store that is already closed.
package ranktest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// Factory makes a fresh, empty Store for one subtest. now is the store's
// clock for period tests (nil = real time). The factory registers cleanup with t.
type Factory func(t *testing.T, now func() time.Time) rank.Store

// Clock is a settable clock for stores under test; safe for concurrent use.
type Clock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

// NewClock returns a clock that reads t until moved.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time; pass it as a store's clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Kind names the documented sentinel err matches ("ok" for nil), so results
// of two engines can be compared; anything else is "internal: <text>".
// ErrInvalidConfig is told apart from ErrBadRequest although both carry the
// code bad_request.
func Kind(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, rank.ErrUnknownBoard):
		return "unknown_board"
	case errors.Is(err, rank.ErrInvalidBoard):
		return "invalid_board"
	case errors.Is(err, rank.ErrInvalidMember):
		return "invalid_member"
	case errors.Is(err, rank.ErrInvalidScore):
		return "invalid_score"
	case errors.Is(err, rank.ErrOutOfRange):
		return "out_of_range"
	case errors.Is(err, rank.ErrDeltaTooLarge):
		return "delta_too_large"
	case errors.Is(err, rank.ErrIdempotencyConflict):
		return "idempotency_conflict"
	case errors.Is(err, rank.ErrBoardClosed):
		return "board_closed"
	case errors.Is(err, rank.ErrLimitReached):
		return "limit_reached"
	case errors.Is(err, rank.ErrBanned):
		return "banned"
	case errors.Is(err, rank.ErrReadOnly):
		return "read_only"
	case errors.Is(err, rank.ErrRejected):
		return "rejected"
	case errors.Is(err, rank.ErrInvalidConfig):
		return "invalid_config"
	case errors.Is(err, rank.ErrBadRequest):
		return "bad_request"
	case errors.Is(err, rank.ErrUnavailable):
		return "unavailable"
	}
	return "internal: " + err.Error()
}

// Run is the whole conformance suite.
func Run(t *testing.T, f Factory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, f Factory)
	}{
		{"Boards", testBoards},
		{"BoardValidation", testBoardValidation},
		{"UnknownBoard", testUnknownBoard},
		{"Modes", testModes},
		{"Order", testOrder},
		{"TieFirst", testTieFirst},
		{"TieLast", testTieLast},
		{"TieShared", testTieShared},
		{"TieKeptWhenScoreUnchanged", testTieKept},
		{"ResultFields", testResultFields},
		{"Idempotency", testIdempotency},
		{"IdempotencyPerMember", testIdempotencyPerMember},
		{"IdempotencyExpiryInjectedClock", testIdempotencyExpiryFake},
		{"IdempotencyExpiryRealClock", testIdempotencyExpiryReal},
		{"Limits", testLimits},
		{"ExtremeScores", testExtremeScores},
		{"TopPages", testTopPages},
		{"RanksAround", testRanksAround},
		{"RankLists", testRankLists},
		{"RankListsLong", testRankListsLong},
		{"Names", testNames},
		{"Periods", testPeriods},
		{"PeriodSelectors", testPeriodSelectors},
		{"Count", testCount},
		{"DeleteBoard", testDeleteBoard},
		{"DeletePeriodBoard", testDeletePeriodBoard},
		{"Concurrency", testConcurrency},
		{"PingClose", testPingClose},
		{"Profiles", testProfiles},
		{"FinalBoard", testFinalBoard},
		{"Schedule", testSchedule},
		{"GracePeriods", testGracePeriods},
		{"ClosedReasons", testClosedReasons},
		{"MaxSubmissions", testMaxSubmissions},
		{"MaxSubmissionsModeration", testMaxSubmissionsModeration},
		{"BoundaryUnderLoad", testBoundaryUnderLoad},
		{"Retain", testRetain},
		{"Bans", testBans},
		{"BanExpiry", testBanExpiry},
		{"BanRacingScores", testBanRace},
		{"RemoveMember", testRemoveMember},
		{"GlobalBans", testGlobalBans},
		{"ShardsValidation", testShardsValidation},
		{"ShardedTwin", testShardedTwin},
		{"ShardedAckRank", testShardedAckRank},
		{"ShardedConfig", testShardedConfig},
		{"ShardedPeriods", testShardedPeriods},
		{"ShardedSkew", testShardedSkew},
		{"HotScores", testHotScores},
		{"HotOrderAndLeave", testHotOrderAndLeave},
		{"HotAt", testHotAt},
		{"HotConfig", testHotConfig},
		{"HotDifferential", testHotDifferential},
		{"HotBans", testHotBans},
		{"DerivedConfig", testDerivedConfig},
		{"DerivedUnion", testDerivedUnion},
		{"DerivedFanIn", testDerivedFanIn},
		{"DerivedWindow", testDerivedWindow},
		{"DerivedBuild", testDerivedBuild},
		{"DerivedBuildConcurrent", testDerivedBuildConcurrent},
		{"DerivedBans", testDerivedBans},
		{"WebhookCRUD", testWebhookCRUD},
		{"OutboxOnce", testOutboxOnce},
		{"OutboxLease", testOutboxLease},
		{"OutboxSkip", testOutboxSkip},
		{"OutboxFails", testOutboxFails},
		{"Meta", testMeta},
		{"History", testHistory},
		{"MetaHistoryAtomic", testMetaHistoryAtomic},
		{"CohortValidation", testCohortValidation},
		{"CohortArrival", testCohortArrival},
		{"CohortTies", testCohortTies},
		{"CohortPeriods", testCohortPeriods},
		{"CohortConcurrent", testCohortConcurrent},
		{"CohortBans", testCohortBans},
		{"LeagueMoves", testLeagueMoves},
		{"LeagueDifferential", testLeagueDifferential},
		{"CohortsList", testCohortsList},
		{"Erase", testErase},
		{"EraseLeagueOpen", testEraseLeagueOpen},
		{"Export", testExport},
		{"StreamMarks", testStreamMarks},
		{"StreamEpoch", testStreamEpoch},
		{"SeasonScan", testSeasonScan},
		{"SeasonScanHidden", testSeasonScanHidden},
		{"SeasonScanLive", testSeasonScanLive},
		{"SeasonScanErrors", testSeasonScanErrors},
		{"Restore", testRestore},
		{"Caps", testCaps},
		{"CapsConcurrent", testCapsConcurrent},
		{"CapValidation", testCapValidation},
		{"NameProfiles", testNameProfiles},
		{"ImportMarks", testImportMarks},
		{"DerivedDifferential", func(t *testing.T, f Factory) { DerivedDifferential(t, f, 14, 2000) }},
		{"Regions", RunRegions}, // regions.go (§17)
	}
	tests = append(tests, integrityTests...) // integrity.go (§16)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, f)
		})
	}
}

// ---- helpers shared by the subtests ----

func board(id string, mut func(b *rank.Board)) rank.Board {
	b := rank.DefaultBoard(id)
	if mut != nil {
		mut(&b)
	}
	return b
}

func put(t *testing.T, s rank.Store, b rank.Board) rank.Board {
	t.Helper()
	got, err := s.PutBoard(t.Context(), b)
	if err != nil {
		t.Fatalf("PutBoard(%s): %v", b.ID, err)
	}
	if got != b {
		t.Fatalf("PutBoard(%s) returned %+v, want %+v", b.ID, got, b)
	}
	return got
}

func delta(boardID, id, member string, d int64) rank.Event {
	return rank.Event{Board: boardID, ID: id, Member: member, Op: rank.OpDelta, Amount: d}
}

func value(boardID, id, member string, v int64) rank.Event {
	return rank.Event{Board: boardID, ID: id, Member: member, Op: rank.OpValue, Amount: v}
}

func named(e rank.Event, name string) rank.Event {
	e.Name = name
	return e
}

// ids hands out fresh request ids.
type ids struct{ n int }

func (g *ids) next() string {
	g.n++
	return fmt.Sprintf("r%d", g.n)
}

func apply(t *testing.T, s rank.Store, e rank.Event) rank.Result {
	t.Helper()
	r, err := rank.ApplyWait(t.Context(), s, e)
	if err != nil {
		t.Fatalf("Apply(%+v): %v", e, err)
	}
	return r
}

func applyErr(t *testing.T, s rank.Store, e rank.Event, want error) {
	t.Helper()
	r, err := rank.ApplyWait(t.Context(), s, e)
	if !errors.Is(err, want) {
		t.Fatalf("Apply(%+v) = %+v, %v; want error %v", e, r, err, want)
	}
}

// applyClosed applies e and wants board_closed with exactly want's reason
// and times (R30).
func applyClosed(t *testing.T, s rank.Store, e rank.Event, want rank.ClosedError) {
	t.Helper()
	r, err := rank.ApplyWait(t.Context(), s, e)
	var got *rank.ClosedError
	if !errors.As(err, &got) || !errors.Is(err, rank.ErrBoardClosed) {
		t.Fatalf("Apply(%+v) = %+v, %v; want board_closed %+v", e, r, err, want)
	}
	if *got != want {
		t.Fatalf("Apply(%+v): board_closed %+v; want %+v", e, *got, want)
	}
}

func top(t *testing.T, s rank.Store, boardID string, p rank.PeriodSel, offset, limit int) rank.Page {
	t.Helper()
	pg, err := s.Top(t.Context(), boardID, p, offset, limit)
	if err != nil {
		t.Fatalf("Top(%s, %q, %d, %d): %v", boardID, p, offset, limit, err)
	}
	return pg
}

// all reads every entry of a period, page by page.
func all(t *testing.T, s rank.Store, boardID string, p rank.PeriodSel) rank.Page {
	t.Helper()
	const lim = 100
	first := top(t, s, boardID, p, 0, lim)
	for off := lim; int64(off) < first.Total; off += lim {
		pg := top(t, s, boardID, p, off, lim)
		first.Entries = append(first.Entries, pg.Entries...)
	}
	return first
}

func ranks(t *testing.T, s rank.Store, boardID string, p rank.PeriodSel, around int, members ...string) rank.Ranks {
	t.Helper()
	r, err := s.Ranks(t.Context(), boardID, p, members, around)
	if err != nil {
		t.Fatalf("Ranks(%s, %q, %v, %d): %v", boardID, p, members, around, err)
	}
	if len(r.Members) != len(members) {
		t.Fatalf("Ranks(%s, %v) returned %d members", boardID, members, len(r.Members))
	}
	return r
}

func one(t *testing.T, s rank.Store, boardID, member string, around int) rank.MemberRank {
	t.Helper()
	return ranks(t, s, boardID, "", around, member).Members[0]
}

// ent builds an expected entry; name is optional.
func ent(rk int64, member string, score int64, name ...string) rank.Entry {
	e := rank.Entry{Rank: rk, Member: member, Score: score}
	if len(name) > 0 {
		e.Name = name[0]
	}
	return e
}

func fmtEntries(es []rank.Entry) string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%d:%s=%d", e.Rank, e.Member, e.Score)
		if e.Name != "" {
			fmt.Fprintf(&b, "(%s)", e.Name)
		}
	}
	return "[" + b.String() + "]"
}

func sameEntries(a, b []rank.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func wantEntries(t *testing.T, what string, got []rank.Entry, want ...rank.Entry) {
	t.Helper()
	if !sameEntries(got, want) {
		t.Fatalf("%s: entries %s, want %s", what, fmtEntries(got), fmtEntries(want))
	}
}

func wantTop(t *testing.T, s rank.Store, boardID string, want ...rank.Entry) {
	t.Helper()
	pg := all(t, s, boardID, "")
	wantEntries(t, "top of "+boardID, pg.Entries, want...)
	if pg.Total != int64(len(want)) {
		t.Fatalf("top of %s: total %d, want %d", boardID, pg.Total, len(want))
	}
}

// snapshot is everything observable about some boards, to prove that a
// failed call changed nothing.
func snapshot(t *testing.T, s rank.Store, boards ...string) string {
	t.Helper()
	var b strings.Builder
	for _, id := range boards {
		pg := all(t, s, id, "")
		fmt.Fprintf(&b, "%s seq=%d total=%d %s\n", id, pg.Seq, pg.Total, fmtEntries(pg.Entries))
	}
	return b.String()
}

// eventually polls cond until it reports true or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
