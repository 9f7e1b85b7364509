//go:build unix

package hub

import "syscall"

// directWrites: the direct path is built on unix sockets (write(2) on the
// descriptor).
const directWrites = true

// writeNonBlocking is one write(2) on the non-blocking socket fd.
func writeNonBlocking(fd uintptr, p []byte) (int, error) {
	return syscall.Write(int(fd), p)
}
