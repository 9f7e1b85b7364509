// Command ceiling turns one apply.lua call captured with redis-cli MONITOR
// into redis-benchmark arguments: the same EVALSHA with a random member
// (m__rand_int__, spread by redis-benchmark -r) and a random request id
// (two placeholders: ids never repeat, so no call is an idempotent replay).
// The capture makes the ceiling run the project's own script with the exact
// keys and arguments the gateway sends.
//
//	redis-cli -p P monitor > mon.txt   (while the gateway applies one event)
//	go run ./bench/ceiling < mon.txt > args.txt
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

func main() {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		args, err := fields(sc.Text())
		if err != nil || len(args) != 29 || !strings.EqualFold(args[0], "EVALSHA") || args[2] != "8" || !strings.Contains(args[6], ":i:") {
			continue
		}
		// args: EVALSHA sha 8 KEYS[1..8] ARGV[1..18]; KEYS[4] is the id's
		// record, ARGV[14] the member.
		i := strings.LastIndex(args[6], ":i:")
		args[6] = args[6][:i+3] + "__rand_int____rand_int__"
		args[10+14] = "m__rand_int__"
		for _, a := range args {
			fmt.Println(a)
		}
		return
	}
	fmt.Fprintln(os.Stderr, "ceiling: no apply.lua EVALSHA (8 keys, an :i: key) in the MONITOR output")
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
