//go:build unix

package sock

import "syscall"

// nonBlockingWrites: takers write with write(2) on the descriptor.
const nonBlockingWrites = true

// writeNonBlocking is one write(2) on the non-blocking socket fd.
func writeNonBlocking(fd uintptr, p []byte) (int, error) {
	return syscall.Write(int(fd), p)
}
