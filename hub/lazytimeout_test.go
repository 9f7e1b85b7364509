package hub

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// lazyTimeout behaves as context.WithTimeout, timer or not: its deadline,
// its end at the deadline, with its parent, and at release.
func TestLazyTimeout(t *testing.T) {
	t.Parallel()
	type key struct{}
	synctest.Test(t, func(t *testing.T) {
		parent, cancelParent := context.WithCancel(context.WithValue(t.Context(), key{}, "v"))
		defer cancelParent()

		l := newLazyTimeout(parent, 2*time.Second)
		if dl, ok := l.Deadline(); !ok || !dl.Equal(time.Now().Add(2*time.Second)) {
			t.Fatalf("Deadline = %v, %v", dl, ok)
		}
		if l.Value(key{}) != "v" || l.Err() != nil {
			t.Fatalf("Value %v, Err %v", l.Value(key{}), l.Err())
		}
		if l.ctx != nil {
			t.Fatal("armed without anyone asking for Done")
		}
		time.Sleep(2 * time.Second)
		if !errors.Is(l.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err at the deadline, unarmed = %v", l.Err())
		}
		l.release()

		l = newLazyTimeout(parent, 2*time.Second)
		done := l.Done()
		time.Sleep(time.Second)
		select {
		case <-done:
			t.Fatal("done before the deadline")
		default:
		}
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("not done at the deadline")
		}
		if !errors.Is(l.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err = %v", l.Err())
		}
		l.release()

		// A nearer parent deadline wins.
		near, cancelNear := context.WithTimeout(parent, time.Second)
		l = newLazyTimeout(near, time.Hour)
		if dl, _ := l.Deadline(); !dl.Equal(time.Now().Add(time.Second)) {
			t.Fatalf("Deadline %v, want the parent's", dl)
		}
		l.release()
		cancelNear()

		// Released: ended, whether armed before or after.
		l = newLazyTimeout(parent, time.Hour)
		l.release()
		if !errors.Is(l.Err(), context.Canceled) {
			t.Fatalf("Err after release, unarmed = %v", l.Err())
		}
		<-l.Done()
		l = newLazyTimeout(parent, time.Hour)
		done = l.Done()
		l.release()
		<-done

		// The parent ending ends it.
		l = newLazyTimeout(parent, time.Hour)
		cancelParent()
		if !errors.Is(l.Err(), context.Canceled) {
			t.Fatalf("Err with the parent cancelled, unarmed = %v", l.Err())
		}
		<-l.Done()
		l.release()
	})
}
