package loadgen

import (
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/coder/websocket"
)

// Drop reasons name the cause without the addresses a socket error
// carries: resets on two connections count under one key.
func TestDropReason(t *testing.T) {
	t.Parallel()
	reset := func(port int) error {
		local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}
		remote := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
		return fmt.Errorf("failed to get reader: %w", &net.OpError{Op: "read", Net: "tcp", Source: local, Addr: remote,
			Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}})
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("failed to get reader: %w", websocket.CloseError{Code: websocket.StatusPolicyViolation, Reason: "slow consumer"}), "close 1008 slow consumer"},
		{websocket.CloseError{Code: websocket.StatusGoingAway}, "close 1001"},
		{reset(40001), "connection reset by peer"},
		{reset(40002), "connection reset by peer"},
		{fmt.Errorf("failed to get reader: %w", net.ErrClosed), "use of closed network connection"},
		{fmt.Errorf("failed to read frame header: %w", io.EOF), "EOF without a close frame"},
		{fmt.Errorf("write: %w", os.ErrDeadlineExceeded), "timeout"},
		{fmt.Errorf("something else"), "something else"},
	} {
		if got := dropReason(tc.err); got != tc.want {
			t.Errorf("dropReason(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
