// Command luasrc prints the full text of one of the Redis engine's scripts
// as the store loads it (rank/lua's Source: the prelude's helpers it
// calls, then the script), for bench/luaab.sh, which loads two commits'
// versions into one Redis.
//
//	go run ./bench/luasrc apply.lua > apply.lua
package main

import (
	"fmt"
	"os"

	"github.com/wsgateway/wsgateway/rank/lua"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: luasrc <script name, e.g. apply.lua>")
		os.Exit(2)
	}
	fmt.Print(lua.Source(os.Args[1]))
}
