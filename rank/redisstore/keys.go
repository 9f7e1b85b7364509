package redisstore

// Key names (see the package comment for the layout).

import (
	"strconv"
)

// key is a key of board: in the slot of the board's group (derived.go;
// the group is fixed at creation and cached once read).
func (s *Store) key(board, suffix string) string {
	return s.keyIn(s.cachedGroup(board), board, suffix)
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

func (s *Store) zkey(board string, idx int64) string {
	return s.key(board, "z:"+strconv.FormatInt(idx, 10))
}

func (s *Store) mkey(board string, idx int64) string {
	return s.key(board, "m:"+strconv.FormatInt(idx, 10))
}

// xkey is a period's sorted set of banned members' hidden entries.
func (s *Store) xkey(board string, idx int64) string {
	return s.key(board, "x:"+strconv.FormatInt(idx, 10))
}

// metaKey is a period's hash of members' meta (§11).
func (s *Store) metaKey(board string, idx int64) string {
	return s.key(board, "meta:"+strconv.FormatInt(idx, 10))
}

// historyKey is member's list of last applied events in a period (§11).
func (s *Store) historyKey(board string, idx int64, member string) string {
	return s.key(board, "h:"+strconv.FormatInt(idx, 10)+":"+member)
}

// gbansKey is the hash of global bans (outside every hash tag).
func (s *Store) gbansKey() string { return s.cfg.Prefix + ":gbans" }

// ckey is a period's hash of events applied per member (R18).
func (s *Store) ckey(board string, idx int64) string {
	return s.key(board, "c:"+strconv.FormatInt(idx, 10))
}
