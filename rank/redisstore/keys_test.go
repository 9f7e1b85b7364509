package redisstore

import (
	"strings"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
	"github.com/wsgateway/wsgateway/rank"
)

// TestKeysOfAConfigInHand: an operation holding a board's config builds
// the board's keys in the config's group, even when the cache forgot the
// board meanwhile (a derived board's PUT forgets its sources while their
// events apply). Built from the cache's fallback, the keys landed in the
// board's own slot: CROSSSLOT beside its dependants' keys on a Cluster,
// and on one Redis the events written where no read looks.
func TestKeysOfAConfigInHand(t *testing.T) {
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{})
	b := rank.DefaultBoard("kf-a")
	b.Group, b.Reset, b.History = "kf", rank.Daily, 3
	if _, err := s.PutBoard(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	c, err := s.loadBoard(t.Context(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	s.forget(b.ID)
	want := s.keyIn("kf", b.ID, "")
	p := s.periodKeys(c, time.Now())
	keys := []string{p.za, p.ma, p.zb, p.mb, p.zp, p.mp}
	sl, _ := slotsFor(c.b, "", time.Now())
	keys = append(keys, s.zkey(&c.b, sl.a), s.kkey(&c.b, sl.a), s.key(&c.b, "seq"), s.ckey(&c.b, sl.a), s.metaKey(&c.b, sl.a), s.historyKey(&c.b, sl.a, "m"))
	for _, k := range keys {
		if !strings.HasPrefix(k, want) {
			t.Errorf("key %q outside the group's slot (want prefix %q)", k, want)
		}
	}
}

// ref is board id as the key helpers take it, its group as the cache
// knows it: tests name boards by id.
func (s *Store) ref(id string) *rank.Board {
	return &rank.Board{ID: id, Group: s.cachedGroup(id)}
}

// TestSyncTagOfAConfigInHand: the slot a durable ack confirms an earlier
// write in is the board's group's as build saw the config, even when the
// cache forgot the board before the confirmation.
func TestSyncTagOfAConfigInHand(t *testing.T) {
	srv := testenv.StartRedis(t)
	s := newStore(t, srv, Config{})
	b := rank.DefaultBoard("kf-b")
	b.Group = "kf"
	if _, err := s.PutBoard(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	bt := newBatch(4)
	c := &call{ctx: t.Context(), e: incr(b.ID, "e1", "m", 1)}
	bt.send = append(bt.send, c)
	s.build(t.Context(), bt)
	if c.err != nil {
		t.Fatal(c.err)
	}
	s.forget(b.ID)
	if got, want := s.syncTags(c)[0], hashTag(s.keyIn("kf", b.ID, "seq")); got != want {
		t.Fatalf("sync tag %q, want the group's %q", got, want)
	}
}

// idKey is a key of board id, its group as the cache knows it.
func (s *Store) idKey(id, suffix string) string { return s.key(s.ref(id), suffix) }

// cachedGroup is the group of board as last read, else the id.
func (s *Store) cachedGroup(board string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.groups[board]; ok {
		return g
	}
	if c, ok := s.boards[board]; ok && !c.unknown {
		return c.b.GroupID()
	}
	return board
}
