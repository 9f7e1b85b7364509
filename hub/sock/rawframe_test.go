package sock

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

// TestWriteTextFrames: frames written with Text read back as the same
// messages through a real WebSocket client, at every header length (7-bit,
// 16-bit and 64-bit payload lengths), alone and in one batch after a
// message the library writes, across the batch's bound.
func TestWriteTextFrames(t *testing.T) {
	t.Parallel()
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
		ws, cc, err := Accept(w, r, websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled}, 5*time.Second, testPool())
		if err != nil {
			served <- err
			return
		}
		defer ws.CloseNow()
		served <- func() error {
			for _, p := range want[:len(sizes)] { // alone: one write each
				if err := writeText(cc, p); err != nil {
					return err
				}
			}
			// One batch after a library message, past maxBatch.
			if err := ws.Write(ctx, websocket.MessageText, want[len(sizes)]); err != nil {
				return err
			}
			for _, p := range want[len(sizes)+1:] {
				if err := cc.Text(p); err != nil {
					return err
				}
			}
			return cc.Flush()
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
