package hub

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"

	"github.com/wsgateway/wsgateway/hub/sock"
)

// TestTakeOverRepliesFirst: a frame written in the writer's place goes
// after the replies queued before it, in the same write; with the writer
// at work, or more replies than a taker writes, the frame is refused (the
// writer's way) and the replies stay queued.
func TestTakeOverRepliesFirst(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()

	h := &Hub{sockBufs: sock.NewBuffers(), cfg: Config{ReplyQueue: 16, ReplyQueueBytes: 1 << 20}}
	h.replyBufs.New = func() any { b := make([]byte, 0, 256); return &b }
	c := &conn{h: h, s: sock.New(server, nil, 5*time.Second, h.sockBufs)}
	reply := func(s string) {
		b := h.getReplyBuf()
		*b = append(*b, s...)
		if !c.replies.add(b, &h.cfg) {
			t.Fatal("reply queue full")
		}
	}
	reply(`{"type":"ack","id":"a"}`)
	reply(`{"type":"ack","id":"b"}`)
	if !c.TryAcquire() {
		t.Fatal("a socket with no writer was not taken")
	}
	c.WriteDirect([]byte(`{"type":"top"}`))
	br := bufio.NewReader(client)
	for _, want := range []string{`{"type":"ack","id":"a"}`, `{"type":"ack","id":"b"}`, `{"type":"top"}`} {
		if got := readText(t, br); got != want {
			t.Fatalf("read %s, want %s", got, want)
		}
	}
	if c.replies.len() != 0 {
		t.Fatal("replies left queued after a taker wrote them")
	}

	c.s.Hold() // the writer at work
	reply(`{"type":"ack","id":"c"}`)
	if c.TryAcquire() {
		t.Fatal("taken while the writer holds the socket")
	}
	c.s.Unhold()
	big := make([]byte, maxDirectReplies)
	reply(`{"type":"page","pad":"` + string(big) + `"}`)
	if c.TryAcquire() {
		t.Fatal("taken with more replies than a taker writes queued before the frame")
	}
	if c.replies.len() != 2 {
		t.Fatalf("%d replies queued after a refused take, want 2", c.replies.len())
	}
}

// readText reads one unmasked server text frame (payload under 64 KiB).
func readText(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		t.Fatal(err)
	}
	n := int(h[1])
	if n == 126 {
		var l [2]byte
		io.ReadFull(br, l[:])
		n = int(l[0])<<8 | int(l[1])
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(br, p); err != nil {
		t.Fatal(err)
	}
	if h[0] != 0x81 {
		t.Fatalf("frame %#x, want a final text frame", h[0])
	}
	return string(p)
}
