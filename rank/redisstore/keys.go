package redisstore

// Key names (see the package comment for the layout).

import (
	"strconv"

	"github.com/wsgateway/wsgateway/rank"
)

// key is a key of the board b configures, in the slot of its group. Keys
// are built from the config an operation holds, never from the group cache,
// which a concurrent forget may have emptied.
func (s *Store) key(b *rank.Board, suffix string) string {
	return s.keyIn(b.GroupID(), b.ID, suffix)
}

// keyIn is a key of board in group g: "<p>:{b}:<suffix>" when the group is
// the board's id (every board before v1.1), else "<p>:{g}/b:<suffix>" ('/'
// never occurs in an id, so no two boards' keys meet).
func (s *Store) keyIn(g, board, suffix string) string {
	if g == "" || g == board {
		return s.cfg.Prefix + ":{" + board + "}:" + suffix
	}
	return s.cfg.Prefix + ":{" + g + "}/" + board + ":" + suffix
}

func (s *Store) boardsKey() string { return s.cfg.Prefix + ":boards" }

func (s *Store) zkey(b *rank.Board, idx int64) string {
	return s.key(b, "z:"+strconv.FormatInt(idx, 10))
}

func (s *Store) mkey(b *rank.Board, idx int64) string {
	return s.key(b, "m:"+strconv.FormatInt(idx, 10))
}

// xkey is a period's sorted set of banned members' hidden entries.
func (s *Store) xkey(b *rank.Board, idx int64) string {
	return s.key(b, "x:"+strconv.FormatInt(idx, 10))
}

// metaKey is a period's hash of members' meta (§11).
func (s *Store) metaKey(b *rank.Board, idx int64) string {
	return s.key(b, "meta:"+strconv.FormatInt(idx, 10))
}

// historyKey is member's list of last applied events in a period (§11).
func (s *Store) historyKey(b *rank.Board, idx int64, member string) string {
	return s.key(b, "h:"+strconv.FormatInt(idx, 10)+":"+member)
}

// gbansKey is the hash of global bans (outside every hash tag).
func (s *Store) gbansKey() string { return s.cfg.Prefix + ":gbans" }

// ckey is a period's hash of events applied per member (R18).
func (s *Store) ckey(b *rank.Board, idx int64) string {
	return s.key(b, "c:"+strconv.FormatInt(idx, 10))
}
