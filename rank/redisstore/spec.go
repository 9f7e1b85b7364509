package redisstore

// The apply config: what apply.lua applies a board's events by, stored in
// the board's cfg hash (field a) with the config version every call
// checks, so a call carries none of it. Its first four tokens are the
// core's; every optional feature a board uses adds a token, which turns
// on that feature's block in apply.lua (rank/lua/apply_<feature>.lua) and
// carries its settings. A board without any runs the core step alone.

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/wsgateway/wsgateway/rank"
)

// applySpec is board b's apply config (apply.lua's header): "<mode>
// <order> <tiebreak> <window ms>", then " <name>" or " <name>=<value>"
// per optional feature.
func applySpec(b rank.Board) string {
	var s strings.Builder
	s.WriteString(string(b.Mode))
	s.WriteByte(' ')
	s.WriteString(string(b.Order))
	s.WriteByte(' ')
	s.WriteString(string(b.Tiebreak))
	s.WriteByte(' ')
	s.WriteString(strconv.FormatInt(time.Duration(b.IdempotencyWindow).Milliseconds(), 10))
	token := func(name string, v int64) {
		s.WriteByte(' ')
		s.WriteString(name)
		s.WriteByte('=')
		s.WriteString(strconv.FormatInt(v, 10))
	}
	if !b.StartsAt.IsZero() {
		token("starts", b.StartsAt.UnixMilli())
	}
	if !b.EndsAt.IsZero() {
		token("ends", b.EndsAt.UnixMilli())
	}
	if g := time.Duration(b.Grace).Milliseconds(); g > 0 {
		token("grace", g)
	}
	if b.MaxSubmissions > 0 {
		token("limit", int64(b.MaxSubmissions))
	}
	if b.History > 0 {
		token("history", int64(b.History))
	}
	if b.Capped() {
		s.WriteString(" cap=")
		s.WriteString(capArg(b))
	}
	if co := cohortSpec(b); co != "" {
		s.WriteString(" cohort=")
		s.WriteString(co)
	}
	if b.Regions {
		s.WriteString(" region") // apply_region.lua (region.go)
	}
	s.WriteString(holdSpec(b)) // §16 (integrity.go)
	return s.String()
}

// capArg is board b's cap (§18) as apply_cap.lua and hot.lua read it,
// "<points>.<per>", or "" for none.
func capArg(b rank.Board) string {
	if !b.Capped() {
		return ""
	}
	return strconv.FormatInt(b.Cap.Points, 10) + "." + string(b.Cap.Per)
}

// shardSpec is the apply config of a shard of sharded board b: the
// board's, with the shard's tie key, and without rank reads unless the
// board's acks carry ranks (apply_shard.lua; R24).
func shardSpec(b rank.Board) string {
	if b.RanksInAck() {
		return applySpec(b) + " shard"
	}
	return applySpec(b) + " shard norank"
}

// writeSpecs stores the apply config of board id, and of each of its
// shards, where a config stored by an earlier version lacks it (apply.lua
// refused a call with "nospec"), unless the config changed meanwhile. Such
// a board may hold raw entries of an earlier tiebreak shared and meta of
// earlier events, so the cfg fields sh and me are set too.
func (s *Store) writeSpecs(ctx context.Context, id string) error {
	s.forget(id)
	c, err := s.loadBoard(ctx, id)
	if err != nil {
		return err
	}
	if _, err := putBoardScript.run(ctx, s.client, []string{c.keys.cfg}, c.ver, s.nowArg(), "", "", "", "", "", c.keys.spec, "old"); err != nil {
		return err
	}
	for _, sh := range c.shards {
		if _, err := putBoardScript.run(ctx, s.client, []string{sh.keys.cfg}, c.ver, s.nowArg(), "", "", "", "", "", sh.keys.spec, "old"); err != nil {
			return err
		}
	}
	return nil
}
