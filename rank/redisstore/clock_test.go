package redisstore

import (
	"testing"
	"testing/synctest"
	"time"
)

// monoNow is time.Now as far as a deadline can tell: an hour after New it
// is an hour later, and it compares equal with time.Now (by the monotonic
// reading both carry).
func TestMonoNow(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := &Store{epoch: time.Now()}
		time.Sleep(time.Hour)
		now, mono := time.Now(), s.monoNow()
		if !mono.Equal(now) || mono.Sub(s.epoch) != time.Hour {
			t.Fatalf("monoNow %v, time.Now %v, %v after the epoch", mono, now, mono.Sub(s.epoch))
		}
		if mono.Add(time.Second).Before(now) || !now.After(mono.Add(-time.Nanosecond)) {
			t.Fatal("a deadline of monoNow does not compare with time.Now")
		}
	})
}
