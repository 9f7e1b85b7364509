package client

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// Writes made while the flusher is busy go out together, in order, in one
// socket write.
func TestBatchConnCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nc, peer := net.Pipe()
		c := newBatchConn(&countingConn{Conn: nc}, time.Minute)
		defer c.Close()
		// The peer does not read yet: the flusher's first write blocks in
		// the pipe, and the next ones gather behind it.
		for _, s := range []string{"a", "b", "c", "d"} {
			if n, err := c.Write([]byte(s)); n != 1 || err != nil {
				t.Fatalf("Write(%q) = %d, %v", s, n, err)
			}
			synctest.Wait()
		}
		var got bytes.Buffer
		buf := make([]byte, 16)
		for got.Len() < 4 {
			n, err := peer.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			got.Write(buf[:n])
			synctest.Wait()
		}
		if got.String() != "abcd" {
			t.Fatalf("peer read %q, want abcd", got.String())
		}
		if w := c.Conn.(*countingConn).writes; w != 2 {
			t.Fatalf("%d socket writes for 4 frames, want 2 (one, then the rest together)", w)
		}
		peer.Close()
	})
}

// A socket write that takes longer than the timeout fails the conn: the
// socket is closed (the library's reader sees it die), writers waiting for
// room and later writes get the error.
func TestBatchConnWriteTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nc, peer := net.Pipe()
		defer peer.Close()
		c := newBatchConn(nc, 10*time.Second)
		defer c.Close()
		big := []byte(strings.Repeat("x", maxBatch))
		if _, err := c.Write(big); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the flusher is blocked in the pipe with big
		if _, err := c.Write(big); err != nil {
			t.Fatal(err)
		}
		blocked := make(chan error, 1)
		go func() { _, err := c.Write([]byte("y")); blocked <- err }()
		synctest.Wait()
		select {
		case err := <-blocked:
			t.Fatalf("a write beyond maxBatch returned (%v) before the flusher made room", err)
		default:
		}
		time.Sleep(11 * time.Second) // fake clock: past the write deadline
		synctest.Wait()
		if err := <-blocked; !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("waiting writer got %v, want the deadline error", err)
		}
		if _, err := c.Write([]byte("z")); err == nil {
			t.Fatal("a write after the failed one succeeded")
		}
		if _, err := peer.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Fatalf("peer read %v, want EOF: the socket is closed", err)
		}
	})
}

// Close wakes a writer waiting for room and ends the flusher.
func TestBatchConnClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nc, peer := net.Pipe()
		defer peer.Close()
		c := newBatchConn(nc, time.Minute)
		big := []byte(strings.Repeat("x", maxBatch))
		c.Write(big)
		synctest.Wait()
		c.Write(big)
		blocked := make(chan error, 1)
		go func() { _, err := c.Write([]byte("y")); blocked <- err }()
		synctest.Wait()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-blocked; !errors.Is(err, net.ErrClosed) {
			t.Fatalf("waiting writer got %v, want net.ErrClosed", err)
		}
		if err := c.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			t.Fatalf("second Close: %v", err)
		}
		synctest.Wait() // the flusher has returned, or synctest.Test reports it
	})
}

// countingConn counts the socket writes.
type countingConn struct {
	net.Conn
	writes int // read by the test once the flusher is idle
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes++
	return c.Conn.Write(p)
}

// batchingClient puts TLS over the batchConn: the socket under a wss://
// connection's TLS is a batchConn, so TLS records are gathered too.
func TestBatchingClientUnderTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	hc := batchingClient(time.Minute, &tls.Config{RootCAs: roots})
	var under net.Conn
	ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if tc, ok := info.Conn.(*tls.Conn); ok {
				under = tc.NetConn()
			}
		},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, ok := under.(*batchConn); !ok {
		t.Fatalf("the conn under TLS is %T, want *batchConn", under)
	}
}
