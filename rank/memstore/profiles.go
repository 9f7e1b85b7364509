package memstore

import (
	"context"
	"fmt"
	"sync"

	"github.com/wsgateway/wsgateway/rank"
)

// profileTable holds every member's profile. Profiles are global, so they
// live beside the boards, under their own lock (a leaf: no other lock is
// held with it). The zero value is ready to use.
type profileTable struct {
	mu sync.RWMutex // guards m
	m  map[string]rank.Profile
}

var _ rank.Profiles = (*Store)(nil)

// PutProfile replaces member's profile.
func (s *Store) PutProfile(_ context.Context, member string, p rank.Profile) error {
	if !rank.ValidMemberID(member) {
		return fmt.Errorf("memstore: put profile: %w", rank.ErrInvalidMember)
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("memstore: put profile %s: %w", member, err)
	}
	if s.closed.Load() {
		return errClosed
	}
	t := &s.profiles
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = make(map[string]rank.Profile)
	}
	t.m[member] = p
	return nil
}

// GetProfile returns member's profile, or rank.ErrNoProfile.
func (s *Store) GetProfile(_ context.Context, member string) (rank.Profile, error) {
	if !rank.ValidMemberID(member) {
		return rank.Profile{}, fmt.Errorf("memstore: get profile: %w", rank.ErrInvalidMember)
	}
	if s.closed.Load() {
		return rank.Profile{}, errClosed
	}
	t := &s.profiles
	t.mu.RLock()
	p, ok := t.m[member]
	t.mu.RUnlock()
	if !ok {
		return rank.Profile{}, fmt.Errorf("memstore: get profile %s: %w", member, rank.ErrNoProfile)
	}
	return p, nil
}

// DeleteProfile removes member's profile, or returns rank.ErrNoProfile.
func (s *Store) DeleteProfile(_ context.Context, member string) error {
	if !rank.ValidMemberID(member) {
		return fmt.Errorf("memstore: delete profile: %w", rank.ErrInvalidMember)
	}
	if s.closed.Load() {
		return errClosed
	}
	t := &s.profiles
	t.mu.Lock()
	_, ok := t.m[member]
	delete(t.m, member)
	t.mu.Unlock()
	if !ok {
		return fmt.Errorf("memstore: delete profile %s: %w", member, rank.ErrNoProfile)
	}
	return nil
}

// Profiles reads the profiles of members; members without one (or with an
// invalid id, which cannot have one) are absent from the map.
func (s *Store) Profiles(_ context.Context, members []string) (map[string]rank.Profile, error) {
	if s.closed.Load() {
		return nil, errClosed
	}
	out := make(map[string]rank.Profile, len(members))
	t := &s.profiles
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, m := range members {
		if p, ok := t.m[m]; ok {
			out[m] = p
		}
	}
	return out, nil
}
