//go:build !unix

package sock

import "syscall"

// nonBlocking: off unix no socket can be taken (TryTake fails), the writer
// writes everything, and reads go through the net.Conn.
const nonBlocking = false

// writeNonBlocking, readNonBlocking and peekNonBlocking are never called
// off unix.
func writeNonBlocking(uintptr, []byte) (int, error) { return 0, syscall.EAGAIN }
func readNonBlocking(uintptr, []byte) (int, error)  { return 0, syscall.EAGAIN }
func peekNonBlocking(uintptr) error                 { return syscall.EAGAIN }
