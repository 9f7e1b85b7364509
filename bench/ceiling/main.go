// Command ceiling turns one apply.lua call captured with redis-cli MONITOR
// into redis-benchmark arguments: the same EVALSHA with a random member
// (m__rand_int__, spread by redis-benchmark -r) and a random request id
// (two placeholders: ids never repeat, so no call is an idempotent replay).
// Its layout follows rank/lua/apply.lua's header: change both together.
// The capture makes the ceiling run the project's own script with the exact
// keys and arguments the gateway sends. With -events N the call carries N
// such events (apply.lua takes a board's events of one pipeline in one
// call), each with its own random member and id. A call of a board that
// holds members (apply_hold.lua) carries one verdict per event after the
// events, counted in DA: each copy gets the captured one's.
//
//	redis-cli -p P monitor > mon.txt   (while the gateway applies one event)
//	go run ./bench/ceiling [-events N] < mon.txt > args.txt
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The layout of a one-event apply.lua call on a board without derived
// boards (rank/lua/apply.lua's header): EVALSHA sha numkeys, 11 board
// keys, 12 board arguments, the event's 8 (member first, request id
// seventh), and the blocks' two counts (DA, DK: "0" "0").
const (
	boardKeys, boardArgs, eventArgs, trailer = 11, 12, 8, 2
	oneEventFields                           = 3 + boardKeys + boardArgs + eventArgs + trailer
	evMember, evID                           = 0, 6
)

func main() {
	events := flag.Int("events", 1, "events per call")
	flag.Parse()
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		args, err := fields(sc.Text())
		if err != nil || len(args) < oneEventFields || len(args) > oneEventFields+1 ||
			!strings.EqualFold(args[0], "EVALSHA") || args[2] != strconv.Itoa(boardKeys) {
			continue
		}
		var verdict []string
		if len(args) == oneEventFields+1 { // apply_hold.lua's verdict
			da, err := strconv.Atoi(args[len(args)-2])
			if err != nil || da != 1 {
				continue
			}
			verdict = args[len(args)-trailer-1 : len(args)-trailer]
			args = append(args[:len(args)-trailer-1:len(args)-trailer-1], "0", args[len(args)-1])
		}
		ev := args[3+boardKeys+boardArgs : len(args)-trailer]
		ev[evMember] = "m__rand_int__"
		ev[evID] = "__rand_int____rand_int__" // ids never repeat: no call is a replay
		out := append([]string{}, args[:3+boardKeys+boardArgs]...)
		for range *events {
			out = append(out, ev...)
		}
		for range *events {
			out = append(out, verdict...)
		}
		tail := args[len(args)-trailer:]
		if verdict != nil {
			tail = []string{strconv.Itoa(*events), tail[1]}
		}
		out = append(out, tail...)
		for _, a := range out {
			fmt.Println(a)
		}
		return
	}
	fmt.Fprintln(os.Stderr, "ceiling: no one-event apply.lua EVALSHA (11 keys) in the MONITOR output")
	os.Exit(1)
}

// fields splits a MONITOR line: `<time> [<db> <addr>] "arg" "arg" …`.
func fields(line string) ([]string, error) {
	i := strings.Index(line, "] ")
	if i < 0 {
		return nil, fmt.Errorf("no client part")
	}
	rest := line[i+2:]
	var out []string
	for len(rest) > 0 {
		if rest[0] != '"' {
			return nil, fmt.Errorf("unquoted field in %q", rest)
		}
		j := 1
		for j < len(rest) && rest[j] != '"' {
			if rest[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(rest) {
			return nil, fmt.Errorf("unterminated field")
		}
		s, err := strconv.Unquote(rest[:j+1])
		if err != nil {
			return nil, err
		}
		out = append(out, s)
		rest = strings.TrimPrefix(rest[j+1:], " ")
	}
	return out, nil
}
