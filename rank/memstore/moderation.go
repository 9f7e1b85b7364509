package memstore

// Bans and removal (docs/protocol.md §7, R21): a banned member's nodes leave
// their period trees for the period's hidden map, keys intact, and come
// back as they were when the last ban on the member ends.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

var _ rank.Moderation = (*Store)(nil)

// banned reports whether member is hidden by a live ban at now. b.mu is held.
func (b *board) banned(member string, now time.Time) bool {
	if ban, ok := b.bans[member]; ok && ban.Live(now) {
		return true
	}
	ban, ok := b.gbans[member]
	return ok && ban.Live(now)
}

// hide moves member's nodes out of every period's tree. b.mu is held for
// writing. The caller moves seq (once per operation, as ban.lua does).
func (b *board) hide(member string) {
	for _, z := range b.periods {
		n := z.members[member]
		if n == nil {
			continue
		}
		z.tr.remove(n)
		z.leaveGroups(n) // its cohort's or region's standings hide it too
		delete(z.members, member)
		if z.hidden == nil {
			z.hidden = map[string]*node{}
		}
		z.hidden[member] = n
	}
}

// show puts member's hidden nodes back, unless a live ban still hides it;
// it reports whether it did.
func (b *board) show(member string, now time.Time) bool {
	if b.banned(member, now) {
		return false
	}
	b.rebase(now) // a hot board's hidden node then has its current score
	for _, z := range b.periods {
		n := z.hidden[member]
		if n == nil {
			continue
		}
		delete(z.hidden, member)
		z.members[member] = n
		z.tr.insert(n)
		z.enterGroups(n)
	}
	return true
}

// expireBans lifts every ban whose Until has passed at now and reports
// whether a member showed again. b.mu is held for writing.
func (b *board) expireBans(now time.Time) bool {
	if b.banExp.IsZero() || now.Before(b.banExp) {
		return false
	}
	var freed []string
	for _, set := range []map[string]rank.Ban{b.bans, b.gbans} {
		for m, ban := range set {
			if !ban.Live(now) {
				delete(set, m)
				freed = append(freed, m)
			}
		}
	}
	shown := false
	for _, m := range freed {
		shown = b.show(m, now) || shown
	}
	b.resetBanExp()
	return shown
}

// resetBanExp recomputes the earliest Until among the bans.
func (b *board) resetBanExp() {
	b.banExp = time.Time{}
	for _, set := range []map[string]rank.Ban{b.bans, b.gbans} {
		for _, ban := range set {
			if !ban.Until.IsZero() && (b.banExp.IsZero() || ban.Until.Before(b.banExp)) {
				b.banExp = ban.Until
			}
		}
	}
	b.banExpNs.Store(0)
	if !b.banExp.IsZero() {
		b.banExpNs.Store(b.banExp.UnixNano())
	}
}

// putBan records ban in set (the board's or the global copies) and hides
// the member. b.mu is held for writing.
func (b *board) putBan(set map[string]rank.Ban, ban rank.Ban, now time.Time) {
	bump := b.expireBans(now)
	was := b.banned(ban.Member, now)
	set[ban.Member] = ban
	b.resetBanExp()
	if !was {
		b.hide(ban.Member)
		bump = true
	}
	if bump {
		b.seq++
	}
}

// liftBan removes member's ban from set; false when it had none (live).
func (b *board) liftBan(set map[string]rank.Ban, member string, now time.Time) bool {
	bump := b.expireBans(now)
	_, ok := set[member]
	if ok {
		delete(set, member)
		b.resetBanExp()
		bump = b.show(member, now) || bump
	}
	if bump {
		b.seq++
	}
	return ok
}

// expire is expireBans on its own, moving seq when a member showed.
func (b *board) expire(now time.Time) {
	if b.expireBans(now) {
		b.seq++
	}
}

// readExpired lifts b's expired bans before a read, which holds only the
// read lock: one atomic load when none is due.
func (s *Store) readExpired(b *board, now time.Time) {
	exp := b.banExpNs.Load()
	if exp == 0 || now.UnixNano() < exp {
		return
	}
	b.mu.Lock()
	if !b.deleted {
		b.expire(now)
	}
	b.mu.Unlock()
}

// locked runs f on board id under its write lock.
func (s *Store) locked(ctx context.Context, op, id string, f func(b *board, now time.Time) error) error {
	b, err := s.lookup(ctx, id)
	if err != nil {
		return fmt.Errorf("memstore: %s %s: %w", op, id, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.deleted {
		return fmt.Errorf("memstore: %s %s: %w", op, id, rank.ErrUnknownBoard)
	}
	now := s.now()
	b.rebase(now) // a hot board's hidden nodes come back with current scores
	if err := f(b, now); err != nil {
		return fmt.Errorf("memstore: %s %s: %w", op, id, err)
	}
	return nil
}

// BanMember implements rank.Moderation.
func (s *Store) BanMember(ctx context.Context, id string, ban rank.Ban) (rank.Ban, error) {
	err := s.locked(ctx, "ban", id, func(b *board, now time.Time) error {
		if err := rank.CheckBan(ban, now); err != nil {
			return err
		}
		ban.At = now
		b.putBan(b.bans, ban, now)
		return nil
	})
	return ban, err
}

// LiftBan implements rank.Moderation.
func (s *Store) LiftBan(ctx context.Context, id, member string) error {
	return s.locked(ctx, "lift ban", id, func(b *board, now time.Time) error {
		if !rank.ValidMemberID(member) {
			return rank.ErrInvalidMember
		}
		if !b.liftBan(b.bans, member, now) {
			return rank.ErrNoBan
		}
		return nil
	})
}

// Bans implements rank.Moderation.
func (s *Store) Bans(ctx context.Context, id string) ([]rank.Ban, error) {
	var out []rank.Ban
	err := s.locked(ctx, "bans", id, func(b *board, now time.Time) error {
		b.expire(now)
		out = sortedBans(b.bans)
		return nil
	})
	return out, err
}

// RemoveMember implements rank.Moderation.
func (s *Store) RemoveMember(ctx context.Context, id, member string, sel rank.PeriodSel) error {
	return s.locked(ctx, "remove member", id, func(b *board, now time.Time) error {
		if !rank.ValidMemberID(member) {
			return rank.ErrInvalidMember
		}
		if len(b.deps) > 0 { // derived.go: their sums would lose the entry's share
			return rankDeps(b.deps[0].id)
		}
		idx, err := sel.Resolve(b.cfg, now)
		if err != nil {
			return err
		}
		// seq moves once whatever changed, as in ban.lua.
		shown := b.expireBans(now)
		z := b.readable(idx, now)
		removed := false
		if z != nil {
			if n := z.members[member]; n != nil {
				z.tr.remove(n)
				z.leaveGroups(n)
				delete(z.members, member)
				removed = true
			} else if z.hidden[member] != nil {
				delete(z.hidden, member)
				removed = true
			} else if z.held[member] != nil {
				delete(z.held, member) // §16: its queue entry goes with it
				removed = true
			}
			if removed {
				delete(z.meta, member)
				delete(z.history, member)
				if z.rg != nil {
					z.rg.forget(member) // its next event places it anew
				}
			}
			if removed && b.hot != nil {
				delete(b.hot.sums, member)
			}
		}
		if shown || removed {
			b.seq++
		}
		if !removed {
			return rank.ErrNoEntry
		}
		return nil
	})
}

// PutGlobalBan implements rank.Moderation: the ban is kept for boards
// created later and copied to every board now.
func (s *Store) PutGlobalBan(ctx context.Context, ban rank.Ban) (rank.Ban, error) {
	if err := ctx.Err(); err != nil {
		return rank.Ban{}, fmt.Errorf("memstore: global ban: %w", err)
	}
	if s.closed.Load() {
		return rank.Ban{}, fmt.Errorf("memstore: global ban: %w", errClosed)
	}
	now := s.now()
	if err := rank.CheckBan(ban, now); err != nil {
		return rank.Ban{}, fmt.Errorf("memstore: global ban: %w", err)
	}
	ban.At = now
	// Under s.mu for writing, so no board is created meanwhile without it.
	s.mu.Lock()
	defer s.mu.Unlock()
	s.global[ban.Member] = ban
	for _, b := range s.boards {
		b.mu.Lock()
		b.putBan(b.gbans, ban, now)
		b.mu.Unlock()
	}
	return ban, nil
}

// LiftGlobalBan implements rank.Moderation.
func (s *Store) LiftGlobalBan(ctx context.Context, member string) error {
	if !rank.ValidMemberID(member) {
		return fmt.Errorf("memstore: lift global ban: %w", rank.ErrInvalidMember)
	}
	if s.closed.Load() {
		return fmt.Errorf("memstore: lift global ban: %w", errClosed)
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	ban, ok := s.global[member]
	if !ok || !ban.Live(now) {
		delete(s.global, member)
		return fmt.Errorf("memstore: lift global ban %s: %w", member, rank.ErrNoBan)
	}
	delete(s.global, member)
	for _, b := range s.boards {
		b.mu.Lock()
		b.liftBan(b.gbans, member, now)
		b.mu.Unlock()
	}
	return nil
}

// GlobalBans implements rank.Moderation.
func (s *Store) GlobalBans(ctx context.Context) ([]rank.Ban, error) {
	if s.closed.Load() {
		return nil, fmt.Errorf("memstore: global bans: %w", errClosed)
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for m, ban := range s.global {
		if !ban.Live(now) {
			delete(s.global, m)
		}
	}
	return sortedBans(s.global), nil
}

func sortedBans(set map[string]rank.Ban) []rank.Ban {
	out := make([]rank.Ban, 0, len(set))
	for _, ban := range set {
		out = append(out, ban)
	}
	slices.SortFunc(out, func(x, y rank.Ban) int { return strings.Compare(x.Member, y.Member) })
	return out
}
