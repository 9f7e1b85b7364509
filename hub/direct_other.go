//go:build !unix

package hub

import "syscall"

// directWrites: off unix there is no direct path (rawConnOf returns nil),
// and every frame goes through the writer.
const directWrites = false

// writeNonBlocking is never called off unix (directWrites); were it, the
// frame would be owed whole and the writer would write it.
func writeNonBlocking(fd uintptr, p []byte) (int, error) {
	return 0, syscall.EAGAIN
}
