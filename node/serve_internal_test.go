package node

import (
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// failingListener fails its first n accepts with err, then accepts for real.
type failingListener struct {
	net.Listener
	mu  sync.Mutex
	n   int
	err error
}

func (l *failingListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if l.n > 0 {
		l.n--
		l.mu.Unlock()
		return nil, l.err
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

// TestAcceptFailuresSurvived is R32 at the listener: out of descriptors,
// the listener counts each failure, backs off and accepts again, instead
// of handing the server an error that would end it; Close ends a back-off.
func TestAcceptFailuresSurvived(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED} {
		t.Run(errno.Error(), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			fail := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", errno)}
			refused := 0
			l := &retryListener{
				Listener: &failingListener{Listener: ln, n: 4, err: fail},
				refused:  func(error) { refused++ },
				log:      slog.New(slog.DiscardHandler),
				done:     make(chan struct{}),
			}
			defer l.Close()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			got, err := l.Accept() // after four failures, the waiting connection is taken
			if err != nil {
				t.Fatal(err)
			}
			got.Close()
			if refused != 4 {
				t.Fatalf("%d refusals counted, want 4", refused)
			}

			l.Listener = &failingListener{Listener: ln, n: 1 << 30, err: fail}
			go func() {
				time.Sleep(50 * time.Millisecond)
				l.Close()
			}()
			if _, err := l.Accept(); err != net.ErrClosed {
				t.Fatalf("Accept during a back-off, then Close: %v, want net.ErrClosed", err)
			}
		})
	}
}
