package redisstore

// Key names (see the package comment for the layout).

import (
	"strconv"
)

func (s *Store) key(board, suffix string) string {
	return s.cfg.Prefix + ":{" + board + "}:" + suffix
}

func (s *Store) boardsKey() string { return s.cfg.Prefix + ":boards" }

func (s *Store) zkey(board string, idx int64) string {
	return s.key(board, "z:"+strconv.FormatInt(idx, 10))
}

func (s *Store) mkey(board string, idx int64) string {
	return s.key(board, "m:"+strconv.FormatInt(idx, 10))
}

// bkey is the board's ban hash (ban.lua).
func (s *Store) bkey(board string) string { return s.key(board, "ban") }

// xkey is a period's sorted set of banned members' hidden entries.
func (s *Store) xkey(board string, idx int64) string {
	return s.key(board, "x:"+strconv.FormatInt(idx, 10))
}

// gbansKey is the hash of global bans (outside every hash tag).
func (s *Store) gbansKey() string { return s.cfg.Prefix + ":gbans" }

// ckey is a period's hash of events applied per member (R18).
func (s *Store) ckey(board string, idx int64) string {
	return s.key(board, "c:"+strconv.FormatInt(idx, 10))
}
