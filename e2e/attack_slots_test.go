package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/auth"
	"github.com/wsgateway/wsgateway/internal/testenv"
)

// slowUpload starts a score post that declares a large body and sends
// only its first bytes (past the 8 KiB fasthttp reads before the gates
// run); the returned connection holds whatever the gateway gave it.
func slowUpload(t *testing.T, g *gateway, tok string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", g.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /api/v1/boards/sl/scores HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n[%s", tok, strings.Repeat(" ", 9000))
	return c
}

// statusOf reads the status of the answer on c (0: none within d).
func statusOf(c net.Conn, d time.Duration) int {
	c.SetReadDeadline(time.Now().Add(d))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, res.Body)
	return res.StatusCode
}

// bodyReads is the gateway's wsgateway_api_body_reads.
func bodyReads(t *testing.T, g *gateway) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, body, err := rest(ctx, "GET", g.HTTP()+"/metrics", "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^wsgateway_api_body_reads (\d+)`).FindSubmatch(body)
	if m == nil {
		t.Fatal("no wsgateway_api_body_reads on /metrics")
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// TestSlowUploadsHoldNoSlots is issue 33 B3: spectators' slow uploads
// hold at most the non-reserved body slots, one member at most its share,
// and each is cut (408) once it falls below the minimum rate; an admin's
// write goes through meanwhile. Before the fix 64 slow uploads of one
// token held every slot until the read timeout and admin writes waited.
func TestSlowUploadsHoldNoSlots(t *testing.T) {
	t.Parallel()
	g := startGateway(t, gwOpts{})
	putBoard(t, g, "sl", nil)
	// One member: an eighth of the 64 slots, the rest refused at once.
	tok := token(t, auth.Claims{Sub: "greedy", Role: auth.Spectator})
	var one []net.Conn
	for range 16 {
		one = append(one, slowUpload(t, g, tok))
	}
	testenv.Until(t, 10*time.Second, "the member's uploads in their slots", func() bool { return bodyReads(t, g) >= 8 })
	if n := bodyReads(t, g); n != 8 {
		t.Fatalf("one member's 16 slow uploads: %d bodies being read, want 8 (its share)", n)
	}
	// Many members fill every slot but the reserved ones, and an admin
	// still writes.
	var many []net.Conn
	for i := range 56 {
		many = append(many, slowUpload(t, g, token(t, auth.Claims{Sub: fmt.Sprint("s", i), Role: auth.Spectator})))
	}
	testenv.Until(t, 10*time.Second, "the shared slots full", func() bool { return bodyReads(t, g) >= 48 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	began := time.Now()
	st, body, err := rest(ctx, "POST", g.HTTP()+"/api/v1/boards/sl/scores", adminToken(t), []map[string]any{{"id": "a1", "member": "m", "delta": 1}}, nil)
	if err != nil || st != 200 {
		t.Fatalf("admin score post while spectators hold the shared slots: %d %s %v", st, body, err)
	}
	t.Logf("admin post answered in %s with %d bodies being read", time.Since(began), bodyReads(t, g))
	// Every slow upload is refused (past its member's share) or cut by
	// the minimum rate, before the read timeout, and the slots come back.
	all := append(one, many...)
	statuses := make([]int, len(all))
	var wg sync.WaitGroup
	for i, c := range all {
		wg.Go(func() { statuses[i] = statusOf(c, 40*time.Second) })
	}
	wg.Wait()
	counts := map[int]int{}
	for _, st := range statuses[:len(one)] {
		counts[st]++
	}
	if counts[429] != 8 || counts[408] != 8 {
		t.Errorf("one member's 16 slow uploads: %v, want 8 × 429 and 8 × 408", counts)
	}
	counts = map[int]int{}
	for _, st := range statuses[len(one):] {
		counts[st]++
	}
	if counts[408] != len(many) {
		t.Errorf("%d members' slow uploads: %v, want each cut with 408", len(many), counts)
	}
	testenv.Until(t, 10*time.Second, "every slot back", func() bool { return bodyReads(t, g) == 0 })
}
