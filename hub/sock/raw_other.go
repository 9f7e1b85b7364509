//go:build !unix

package sock

import "syscall"

// nonBlockingWrites: off unix no socket can be taken (TryTake fails), and
// the writer writes everything.
const nonBlockingWrites = false

// writeNonBlocking is never called off unix.
func writeNonBlocking(uintptr, []byte) (int, error) { return 0, syscall.EAGAIN }
