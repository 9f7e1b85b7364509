package redisstore

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/wsgateway/wsgateway/rank"
)

// Profiles are global (one member, many boards), so their keys carry no
// board hash tag and spread over the cluster's slots:
//
//	<p>:p:<member>   hash: n = name, a = avatar, c = country (absent fields are left out)
//
// A member id never contains a brace, so the whole key is hashed. Batched
// reads are one pipeline of HGETALL; go-redis splits a Cluster pipeline by
// slot and sends each node its part concurrently, so a batch costs one round
// trip per master, not one per member.

var _ rank.Profiles = (*Store)(nil)

// maxProfileBatch bounds one pipeline of profile reads.
const maxProfileBatch = 1000

func (s *Store) profileKey(member string) string { return s.cfg.Prefix + ":p:" + member }

// PutProfile replaces member's profile in one MULTI (DEL, HSET), so a
// reader never sees a mix of the old and the new one.
func (s *Store) PutProfile(ctx context.Context, member string, p rank.Profile) error {
	if !rank.ValidMemberID(member) {
		return fmt.Errorf("redisstore: put profile: %w", rank.ErrInvalidMember)
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("redisstore: put profile %s: %w", member, err)
	}
	if s.closed.Load() {
		return ErrClosed
	}
	fields := make([]any, 0, 6)
	for _, f := range [...]struct{ k, v string }{{"n", p.Name}, {"a", p.Avatar}, {"c", p.Country}} {
		if f.v != "" {
			fields = append(fields, f.k, f.v)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	key := s.profileKey(member)
	_, err := s.client.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Del(ctx, key)
		pipe.HSet(ctx, key, fields...)
		return nil
	})
	if err != nil {
		return s.fail("put profile", "", err)
	}
	return nil
}

// GetProfile returns member's profile, or rank.ErrNoProfile.
func (s *Store) GetProfile(ctx context.Context, member string) (rank.Profile, error) {
	if !rank.ValidMemberID(member) {
		return rank.Profile{}, fmt.Errorf("redisstore: get profile: %w", rank.ErrInvalidMember)
	}
	if s.closed.Load() {
		return rank.Profile{}, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	h, err := s.client.HGetAll(ctx, s.profileKey(member)).Result()
	if err != nil {
		return rank.Profile{}, s.fail("get profile", "", err)
	}
	p, ok := profileOf(h)
	if !ok {
		return rank.Profile{}, fmt.Errorf("redisstore: get profile %s: %w", member, rank.ErrNoProfile)
	}
	return p, nil
}

// DeleteProfile removes member's profile, or returns rank.ErrNoProfile.
func (s *Store) DeleteProfile(ctx context.Context, member string) error {
	if !rank.ValidMemberID(member) {
		return fmt.Errorf("redisstore: delete profile: %w", rank.ErrInvalidMember)
	}
	if s.closed.Load() {
		return ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	n, err := s.client.Del(ctx, s.profileKey(member)).Result()
	if err != nil {
		return s.fail("delete profile", "", err)
	}
	if n == 0 {
		return fmt.Errorf("redisstore: delete profile %s: %w", member, rank.ErrNoProfile)
	}
	return nil
}

// Profiles reads the profiles of members in pipelines of HGETALL (one for
// up to maxProfileBatch distinct members); members without one, or with an
// invalid id, are absent from the map.
func (s *Store) Profiles(ctx context.Context, members []string) (map[string]rank.Profile, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	out := make(map[string]rank.Profile, len(members))
	ids := make([]string, 0, len(members))
	seen := make(map[string]struct{}, len(members))
	for _, m := range members {
		if _, dup := seen[m]; dup || !rank.ValidMemberID(m) {
			continue
		}
		seen[m] = struct{}{}
		ids = append(ids, m)
	}
	if len(ids) == 0 {
		return out, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	for len(ids) > 0 {
		part := ids[:min(maxProfileBatch, len(ids))]
		ids = ids[len(part):]
		pipe := s.client.Pipeline()
		cmds := make([]*redis.MapStringStringCmd, len(part))
		for i, m := range part {
			cmds[i] = pipe.HGetAll(ctx, s.profileKey(m))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, s.fail("profiles", "", err)
		}
		for i, cmd := range cmds {
			if p, ok := profileOf(cmd.Val()); ok {
				out[part[i]] = p
			}
		}
	}
	return out, nil
}

func profileOf(h map[string]string) (rank.Profile, bool) {
	p := rank.Profile{Name: h["n"], Avatar: h["a"], Country: h["c"]}
	return p, !p.Empty()
}
