package api

import (
	"strconv"
	"testing"
	"time"
)

func TestKeyedLimiter(t *testing.T) {
	t.Parallel()
	k := newKeyedLimiter(10) // burst 20
	now := time.Unix(1000, 0)
	for i := range 20 {
		if ok, _ := k.allow("a", now); !ok {
			t.Fatalf("request %d of the burst refused", i)
		}
	}
	ok, d := k.allow("a", now)
	if ok || d != 100*time.Millisecond {
		t.Fatalf("21st: ok=%v wait %v, want refused, 100ms", ok, d)
	}
	if ok, _ := k.allow("b", now); !ok {
		t.Fatal("another key shares a's bucket")
	}
	if ok, _ := k.allow("a", now.Add(100*time.Millisecond)); !ok {
		t.Fatal("a token refilled after 100ms was refused")
	}
	// Past the bound, refilled buckets are forgotten and new keys share one
	// overflow bucket only while none can be.
	for i := range maxLimiterKeys {
		k.allow(strconv.Itoa(i), now)
	}
	if n := len(k.buckets); n != maxLimiterKeys {
		t.Fatalf("%d buckets, want the bound %d", n, maxLimiterKeys)
	}
	later := now.Add(k.full)
	k.allow("fresh", later)
	if n := len(k.buckets); n > 3 {
		t.Fatalf("%d buckets after the refill time, want the idle ones forgotten", n)
	}
}
