//go:build unix

package sock

import (
	"syscall"
	"unsafe"
)

// nonBlocking: writes and reads go through the descriptor with write(2)
// and read(2).
const nonBlocking = true

// writeNonBlocking is one write(2) on the non-blocking socket fd.
func writeNonBlocking(fd uintptr, p []byte) (int, error) {
	return syscall.Write(int(fd), p)
}

// readNonBlocking is one read(2) on the non-blocking socket fd.
func readNonBlocking(fd uintptr, p []byte) (int, error) {
	return syscall.Read(int(fd), p)
}

// peekNonBlocking is one recv(2) of a byte with MSG_PEEK on the
// non-blocking socket fd, into the stack: nil when a byte (or the end) is
// there, EAGAIN when none is.
func peekNonBlocking(fd uintptr) error {
	var b [1]byte
	_, _, errno := syscall.Syscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1, syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
