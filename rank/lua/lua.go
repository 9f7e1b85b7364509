// Package lua holds the Redis engine's Lua scripts, embedded. Each script
// starts with a header listing every KEYS[i] and ARGV[i]; every key a script
// touches arrives in KEYS and carries the board's {hash tag}, so each script
// runs on one Redis Cluster slot.
package lua

import (
	"embed"
	"fmt"
)

//go:embed *.lua
var files embed.FS

// Script names.
const (
	Apply = "apply.lua"
	Top   = "top.lua"
	Ranks = "ranks.lua"
)

// Source returns the text of the named script. It panics on an unknown name:
// names are the constants above, so a miss is a programming error.
func Source(name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("lua: no script %q", name))
	}
	return string(b)
}

// Names lists every embedded script.
func Names() []string { return []string{Apply, Top, Ranks} }
