package auth

import (
	"slices"
	"time"
)

// Role is what a token's holder may do (docs/protocol.md §3).
type Role string

const (
	Player    Role = "player"
	Spectator Role = "spectator"
	Server    Role = "server"
	Admin     Role = "admin"
)

// Valid reports whether r is one of the four roles.
func (r Role) Valid() bool {
	switch r {
	case Player, Spectator, Server, Admin:
		return true
	}
	return false
}

// Principal is a verified token's holder.
type Principal struct {
	Member string    // the `sub` claim
	Role   Role      // `role`, Player when absent
	Boards []string  // `boards`; nil means every board
	Name   string    // `name`, at most 32 characters; "" when absent
	Expiry time.Time // `exp`
}

// MayAccess reports whether the token's `boards` claim admits board (R11).
func (p Principal) MayAccess(board string) bool {
	return p.Boards == nil || slices.Contains(p.Boards, board)
}

// MayScoreFor reports whether the role may send a score event for member on a
// board whose client_writes is clientWrites (the role table of §3).
func (p Principal) MayScoreFor(member string, clientWrites bool) bool {
	switch p.Role {
	case Server, Admin:
		return true
	case Player:
		return clientWrites && member == p.Member
	}
	return false
}

// MayManage reports whether the role may create, change and delete boards.
func (p Principal) MayManage() bool { return p.Role == Admin }

// Limited reports whether the per-connection message rate applies (--rate).
func (p Principal) Limited() bool { return p.Role == Player || p.Role == Spectator }
