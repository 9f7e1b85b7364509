package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/internal/testenv"
)

// TestUpgradeAfterREST: one keep-alive connection first used for REST
// (served by fiber's fasthttp server) then upgraded to a WebSocket (served
// by net/http after the hand-over) gets its 101 and the welcome frame.
func TestUpgradeAfterREST(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testenv.LogBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--dev", "--addr", "127.0.0.1:0", "--node-id", "split-1", "--drain-timeout", "2s"}, envMap(nil), &stdout, &stderr)
	}()
	defer func() { cancel(); <-done }()
	addrRe := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)
	tokenRe := regexp.MustCompile(`admin token \(24h\):\n(\S+)\n`)
	testenv.Until(t, 10*time.Second, "the start banner", func() bool { return tokenRe.MatchString(stdout.String()) })
	addr := addrRe.FindStringSubmatch(stdout.String())[1]
	token := tokenRe.FindStringSubmatch(stdout.String())[1]

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	io.WriteString(c, "GET /api/v1/boards HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+token+"\r\n\r\n")
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("REST on the new connection: %d %s", res.StatusCode, body)
	}
	io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"+
		"Sec-WebSocket-Protocol: lb.v1, bearer."+token+"\r\n\r\n")
	res, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusSwitchingProtocols || res.Header.Get("Sec-WebSocket-Protocol") != "lb.v1" {
		t.Fatalf("upgrade on the REST connection: %d %v", res.StatusCode, res.Header)
	}
	// The first frame: unmasked text, a payload under 126 bytes or with a
	// 16-bit length, holding the welcome.
	var frame [512]byte
	n, err := io.ReadAtLeast(br, frame[:], 2)
	if err != nil {
		t.Fatal(err)
	}
	for !bytes.Contains(frame[:n], []byte(`"welcome"`)) && n < len(frame) {
		m, err := br.Read(frame[n:])
		if err != nil {
			t.Fatalf("reading the welcome frame: %v (got %q)", err, frame[:n])
		}
		n += m
	}
	if frame[0] != 0x81 || !bytes.Contains(frame[:n], []byte(`"node":"split-1"`)) {
		t.Fatalf("first frame %q, want the welcome", frame[:n])
	}
}
