package memstore_test

// The model's moderation (§7, R21), from the contract and the rules
// ranktest pins down: a ban hides the member's entry (score and tie
// position kept) and refuses its events; it shows again when no live ban
// is left; a ban past its until is lifted by the next touch of the board;
// seq moves once per operation that changed what reads show (a ban of a
// member not yet hidden, a lift or expiry that shows one, a removal).

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

var _ rank.Moderation = (*model)(nil)

// newModelAt is a model whose ban clock is now.
func newModelAt(now func() time.Time) *model {
	m := newModel()
	m.now = now
	return m
}

func (m *model) clock() time.Time {
	if m.now == nil {
		return time.Now()
	}
	return m.now()
}

func (b *mboard) isBanned(member string, now time.Time) bool {
	if ban, ok := b.bans[member]; ok && ban.Live(now) {
		return true
	}
	ban, ok := b.gbans[member]
	return ok && ban.Live(now)
}

// show puts member's entry back unless a live ban still hides it; it
// reports whether the member is shown now (entry or not).
func (b *mboard) show(member string, now time.Time) bool {
	if b.isBanned(member, now) {
		return false
	}
	if s := b.hidden[member]; s != nil {
		delete(b.hidden, member)
		b.scores[member] = s
	}
	return true
}

// expireBans drops the bans past their until and reports whether a member
// showed again (the caller moves seq).
func (b *mboard) expireBans(now time.Time) bool {
	var freed []string
	for _, set := range []map[string]rank.Ban{b.bans, b.gbans} {
		for mem, ban := range set {
			if !ban.Live(now) {
				delete(set, mem)
				freed = append(freed, mem)
			}
		}
	}
	shown := false
	for _, mem := range freed {
		shown = b.show(mem, now) || shown
	}
	return shown
}

func (m *model) expire(b *mboard) {
	if b.expireBans(m.clock()) {
		b.seq++
	}
}

func (b *mboard) putBan(set map[string]rank.Ban, ban rank.Ban, now time.Time) {
	bump := b.expireBans(now)
	if !b.isBanned(ban.Member, now) {
		if s := b.scores[ban.Member]; s != nil {
			delete(b.scores, ban.Member)
			b.hidden[ban.Member] = s
		}
		bump = true
	}
	set[ban.Member] = ban
	if bump {
		b.seq++
	}
}

func (b *mboard) liftBan(set map[string]rank.Ban, member string, now time.Time) bool {
	bump := b.expireBans(now)
	_, ok := set[member]
	if ok {
		delete(set, member)
		bump = b.show(member, now) || bump
	}
	if bump {
		b.seq++
	}
	return ok
}

func (m *model) BanMember(_ context.Context, id string, ban rank.Ban) (rank.Ban, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, err := m.board(id)
	if err != nil {
		return rank.Ban{}, err
	}
	now := m.clock()
	if err := rank.CheckBan(ban, now); err != nil {
		return rank.Ban{}, err
	}
	ban.At = now
	b.putBan(b.bans, ban, now)
	return ban, nil
}

func (m *model) LiftBan(_ context.Context, id, member string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, err := m.board(id)
	if err != nil {
		return err
	}
	if !rank.ValidMemberID(member) {
		return rank.ErrInvalidMember
	}
	if !b.liftBan(b.bans, member, m.clock()) {
		return rank.ErrNoBan
	}
	return nil
}

func (m *model) Bans(_ context.Context, id string) ([]rank.Ban, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, err := m.board(id)
	if err != nil {
		return nil, err
	}
	m.expire(b)
	return banList(b.bans), nil
}

func (m *model) RemoveMember(_ context.Context, id, member string, sel rank.PeriodSel) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, err := m.board(id)
	if err != nil {
		return err
	}
	if !rank.ValidMemberID(member) {
		return rank.ErrInvalidMember
	}
	now := m.clock()
	if idx, err := sel.Resolve(b.cfg, now); err != nil || idx != 0 {
		return rank.ErrBadRequest // the model has no periods
	}
	shown := b.expireBans(now)
	removed := b.scores[member] != nil || b.hidden[member] != nil
	delete(b.scores, member)
	delete(b.hidden, member)
	if shown || removed {
		b.seq++
	}
	if !removed {
		return rank.ErrNoEntry
	}
	return nil
}

func (m *model) PutGlobalBan(_ context.Context, ban rank.Ban) (rank.Ban, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	if err := rank.CheckBan(ban, now); err != nil {
		return rank.Ban{}, err
	}
	ban.At = now
	m.global[ban.Member] = ban
	for _, b := range m.boards {
		b.putBan(b.gbans, ban, now)
	}
	return ban, nil
}

func (m *model) LiftGlobalBan(_ context.Context, member string) error {
	if !rank.ValidMemberID(member) {
		return rank.ErrInvalidMember
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	ban, ok := m.global[member]
	delete(m.global, member)
	if !ok || !ban.Live(now) {
		return rank.ErrNoBan
	}
	for _, b := range m.boards {
		b.liftBan(b.gbans, member, now)
	}
	return nil
}

func (m *model) GlobalBans(context.Context) ([]rank.Ban, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	for mem, ban := range m.global {
		if !ban.Live(now) {
			delete(m.global, mem)
		}
	}
	return banList(m.global), nil
}

func banList(set map[string]rank.Ban) []rank.Ban {
	out := make([]rank.Ban, 0, len(set))
	for _, ban := range set {
		out = append(out, ban)
	}
	slices.SortFunc(out, func(x, y rank.Ban) int { return strings.Compare(x.Member, y.Member) })
	return out
}
