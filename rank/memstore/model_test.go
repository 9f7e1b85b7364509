package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wsgateway/wsgateway/rank"
	"github.com/wsgateway/wsgateway/rank/memstore"
)

// model is a deliberately naive rank.Store (sort on every read, no expiry,
// no periods) written from the contract alone, so that Differential against
// it checks the tree engine rather than comparing it with itself.
type model struct {
	*memstore.Outbox // the outbox is not modelled: the memory engine's own stands in
	mu               sync.Mutex
	boards           map[string]*mboard
	global           map[string]rank.Ban // live global bans (model_moderation_test.go)
	now              func() time.Time    // the store clock of bans; nil = time.Now
	// profiles by member; nil until the first PutProfile.
	profiles map[string]rank.Profile
}

type mboard struct {
	cfg    rank.Board
	seq    int64
	scores map[string]*mscore
	names  map[string]string
	idem   map[[2]string]midem // by member and request id (R4 v1.1)
	// Moderation (model_moderation_test.go): banned members' entries move
	// from scores to hidden, keeping score and tie position.
	hidden      map[string]*mscore
	bans, gbans map[string]rank.Ban
}

type mscore struct {
	member  string
	score   int64
	reached int64
}

type midem struct {
	hash uint64
	res  rank.Result
}

var _ rank.Store = (*model)(nil)

func newModel() *model {
	return &model{Outbox: memstore.NewOutbox(nil), boards: map[string]*mboard{}, global: map[string]rank.Ban{}}
}

func (m *model) board(id string) (*mboard, error) {
	if !rank.ValidBoardID(id) {
		return nil, rank.ErrInvalidBoard
	}
	b := m.boards[id]
	if b == nil {
		return nil, rank.ErrUnknownBoard
	}
	return b, nil
}

// sorted lists members in rank order with their ranks.
func (b *mboard) sorted() ([]*mscore, []int64) {
	all := make([]*mscore, 0, len(b.scores))
	for _, s := range b.scores {
		all = append(all, s)
	}
	slices.SortFunc(all, func(x, y *mscore) int {
		switch {
		case b.cfg.Better(x.score, y.score):
			return -1
		case b.cfg.Better(y.score, x.score):
			return 1
		}
		switch b.cfg.Tiebreak {
		case rank.First:
			return int(x.reached - y.reached)
		case rank.Last:
			return int(y.reached - x.reached)
		}
		return -strings.Compare(x.member, y.member)
	})
	ranks := make([]int64, len(all))
	for i := range all {
		ranks[i] = int64(i + 1)
		if b.cfg.Tiebreak == rank.Shared && i > 0 && all[i].score == all[i-1].score {
			ranks[i] = ranks[i-1]
		}
	}
	return all, ranks
}

func (b *mboard) rankOf(member string) int64 {
	all, ranks := b.sorted()
	for i, s := range all {
		if s.member == member {
			return ranks[i]
		}
	}
	return 0
}

func (b *mboard) entries(from, to int) []rank.Entry {
	all, ranks := b.sorted()
	out := []rank.Entry{}
	for i := from; i < to && i < len(all); i++ {
		out = append(out, rank.Entry{Rank: ranks[i], Member: all[i].member, Score: all[i].score, Name: b.names[all[i].member]})
	}
	return out
}

func (m *model) PutBoard(_ context.Context, cfg rank.Board) (rank.Board, error) {
	if err := cfg.Validate(); err != nil {
		return rank.Board{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if b := m.boards[cfg.ID]; b != nil {
		b.cfg = cfg
		return cfg, nil
	}
	nb := &mboard{cfg: cfg, scores: map[string]*mscore{}, names: map[string]string{}, idem: map[[2]string]midem{},
		hidden: map[string]*mscore{}, bans: map[string]rank.Ban{}, gbans: map[string]rank.Ban{}}
	for mem, ban := range m.global {
		if ban.Live(m.clock()) {
			nb.gbans[mem] = ban
		}
	}
	m.boards[cfg.ID] = nb
	return cfg, nil
}

func (m *model) GetBoard(_ context.Context, id string) (rank.Board, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, err := m.board(id)
	if err != nil {
		return rank.Board{}, err
	}
	return b.cfg, nil
}

func (m *model) Boards(context.Context) ([]rank.Board, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []rank.Board
	for _, b := range m.boards {
		out = append(out, b.cfg)
	}
	slices.SortFunc(out, func(x, y rank.Board) int { return strings.Compare(x.ID, y.ID) })
	return out, nil
}

func (m *model) DeleteBoard(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.board(id); err != nil {
		return err
	}
	delete(m.boards, id)
	return nil
}

func (m *model) Count(_ context.Context, id string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, err := m.board(id)
	if err != nil {
		return 0, err
	}
	m.expire(b)
	return int64(len(b.scores)), nil
}

func (m *model) Board(ctx context.Context, id string) (rank.Board, error) { return m.GetBoard(ctx, id) }
func (m *model) Forget(string)                                            {}
func (m *model) Now(context.Context) (time.Time, error)                   { return time.Now(), nil }

func (m *model) Apply(_ context.Context, e rank.Event, done rank.Done) { done(m.apply(e)) }

func (m *model) apply(e rank.Event) (rank.Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, err := m.board(e.Board)
	if err != nil {
		return rank.Result{}, err
	}
	if err := e.Check(b.cfg); err != nil {
		return rank.Result{}, err
	}
	if rec, ok := b.idem[[2]string{e.Member, e.ID}]; ok {
		if rec.hash != e.PayloadHash() {
			return rank.Result{}, rank.ErrIdempotencyConflict
		}
		r := rec.res
		r.Duplicate = true
		return r, nil
	}
	// R21, after the duplicate check: a retry of an event applied before
	// a ban still gets its first result.
	m.expire(b)
	if b.isBanned(e.Member, m.clock()) {
		return rank.Result{}, rank.ErrBanned
	}
	cur, had := b.scores[e.Member]
	var old int64
	if had {
		old = cur.score
	}
	n, err := rank.Combine(b.cfg, had, old, e)
	if err != nil {
		return rank.Result{}, err
	}
	b.seq++
	r := rank.Result{Board: e.Board, Member: e.Member, Score: n, Seq: b.seq}
	if had {
		r.PrevRank, r.PrevScore, r.Had = b.rankOf(e.Member), old, true
		if n != old {
			cur.score, cur.reached = n, b.seq
		}
	} else {
		b.scores[e.Member] = &mscore{member: e.Member, score: n, reached: b.seq}
	}
	r.Rank = b.rankOf(e.Member)
	if e.Name != "" {
		b.names[e.Member] = e.Name
	}
	b.idem[[2]string{e.Member, e.ID}] = midem{e.PayloadHash(), r}
	return r, nil
}

func (m *model) Top(_ context.Context, id string, sel rank.PeriodSel, offset, limit int) (rank.Page, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, err := m.board(id)
	if err != nil {
		return rank.Page{}, err
	}
	if offset < 0 || limit < 0 {
		return rank.Page{}, rank.ErrBadRequest
	}
	m.expire(b)
	idx, err := sel.Resolve(b.cfg, time.Now())
	if err != nil {
		return rank.Page{}, err
	}
	if idx != 0 {
		return rank.Page{}, fmt.Errorf("model: no periods")
	}
	return rank.Page{Board: id, Offset: offset, Entries: b.entries(offset, offset+limit), Total: int64(len(b.scores)), Seq: b.seq}, nil
}

func (m *model) Ranks(_ context.Context, id string, sel rank.PeriodSel, members []string, around int) (rank.Ranks, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, err := m.board(id)
	if err != nil {
		return rank.Ranks{}, err
	}
	if around == rank.BoardRanks { // the model has no cohorts: its ranks are the board's
		around = 0
	}
	if around < 0 {
		return rank.Ranks{}, rank.ErrBadRequest
	}
	m.expire(b)
	if _, err := sel.Resolve(b.cfg, time.Now()); err != nil {
		return rank.Ranks{}, err
	}
	out := rank.Ranks{Board: id, Total: int64(len(b.scores)), Seq: b.seq}
	all, ranks := b.sorted()
	for _, mem := range members {
		if !rank.ValidMemberID(mem) {
			return rank.Ranks{}, rank.ErrInvalidMember
		}
		mr := rank.MemberRank{Member: mem}
		for i, s := range all {
			if s.member == mem {
				mr = rank.MemberRank{Member: mem, Found: true, Rank: ranks[i], Score: s.score, Name: b.names[mem],
					Around: b.entries(max(0, i-around), i+around+1)}
			}
		}
		out.Members = append(out.Members, mr)
	}
	return out, nil
}

// CachedBoard holds nothing at hand: callers ask Board.
func (m *model) CachedBoard(string) (*rank.Board, bool) { return nil, false }

// History is outside what the model checks (the conformance suite does).
func (m *model) History(context.Context, string, rank.PeriodSel, string) ([]rank.HistoryEvent, error) {
	return nil, errors.ErrUnsupported
}

// Cohorts are outside what this model checks (ranktest's cohort model does).
func (m *model) CohortTop(context.Context, string, rank.PeriodSel, string, int, int) (rank.Page, error) {
	return rank.Page{}, errors.ErrUnsupported
}

func (m *model) Cohorts(context.Context, string, rank.PeriodSel) ([]string, error) {
	return nil, errors.ErrUnsupported
}

func (m *model) MemberTier(context.Context, string, rank.PeriodSel, string) (string, error) {
	return "", errors.ErrUnsupported
}

// The model keeps profiles in a map: Differential does not compare them,
// the conformance suite does.
func (m *model) PutProfile(_ context.Context, member string, p rank.Profile) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.profiles == nil {
		m.profiles = map[string]rank.Profile{}
	}
	m.profiles[member] = p
	return nil
}

func (m *model) GetProfile(_ context.Context, member string) (rank.Profile, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.profiles[member]
	if !ok {
		return rank.Profile{}, rank.ErrNoProfile
	}
	return p, nil
}

func (m *model) DeleteProfile(_ context.Context, member string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.profiles[member]; !ok {
		return rank.ErrNoProfile
	}
	delete(m.profiles, member)
	return nil
}

func (m *model) Profiles(_ context.Context, members []string) (map[string]rank.Profile, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]rank.Profile{}
	for _, mb := range members {
		if p, ok := m.profiles[mb]; ok {
			out[mb] = p
		}
	}
	return out, nil
}

func (m *model) Ping(context.Context) error { return nil }
func (m *model) Close() error               { return nil }
