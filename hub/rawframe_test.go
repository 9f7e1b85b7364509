package hub

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestWriteTextFrames: frames the hub writes itself (rawframe.go) read back
// as the same messages through a real WebSocket client, at every header
// length (7-bit, 16-bit and 64-bit payload lengths), alone and corked in
// one batch with a message the library writes, across the cork's bound.
func TestWriteTextFrames(t *testing.T) {
	t.Parallel()
	h := &Hub{}
	h.cfg.WriteTimeout = 5 * time.Second
	h.corkBufs.New = func() any { b := make([]byte, 0, 4096); return &b }
	sizes := []int{0, 1, 125, 126, 1000, 65535, 65536, 200000}
	payload := func(n, salt int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a' + byte((i+salt)%26)
		}
		return b
	}
	var want [][]byte
	for _, n := range sizes {
		want = append(want, payload(n, 0))
	}
	want = append(want, []byte("from the library"))
	for i, n := range sizes {
		want = append(want, payload(n, i+1))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	served := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &corkWriter{ResponseWriter: w, h: h}
		ws, err := websocket.Accept(cw, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
		if err != nil {
			served <- err
			return
		}
		defer ws.CloseNow()
		served <- func() error {
			for _, p := range want[:len(sizes)] { // alone: one write each
				if err := cw.cc.writeText(p); err != nil {
					return err
				}
			}
			cw.cc.cork() // one batch: a library message, then frames past maxCork
			if err := ws.Write(ctx, websocket.MessageText, want[len(sizes)]); err != nil {
				return err
			}
			for _, p := range want[len(sizes)+1:] {
				if err := cw.cc.writeText(p); err != nil {
					return err
				}
			}
			return cw.cc.uncork()
		}()
		ws.Read(ctx) // until the client closes
	}))
	defer srv.Close()

	c, _, err := websocket.Dial(ctx, "ws"+srv.URL[len("http"):], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	for i, w := range want {
		typ, got, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if typ != websocket.MessageText || !bytes.Equal(got, w) {
			t.Fatalf("message %d: %v of %d bytes, want text of %d bytes%s", i, typ, len(got), len(w), diffAt(got, w))
		}
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

func diffAt(a, b []byte) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf(" (first difference at byte %d)", i)
		}
	}
	return ""
}
