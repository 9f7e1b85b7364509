// Package lua holds the Redis engine's Lua scripts, embedded. Each script
// starts with a header listing every KEYS[i] and ARGV[i]; every key a script
// touches carries the board's {hash tag}, so each script runs on one Redis
// Cluster slot. Every key arrives in KEYS but the idempotency records'
// bucket hashes (prelude.lua), whose names depend on the script's clock,
// and the keys of apply.lua's blocks (a cohort board's, whose names depend
// on where the script places a member; a period's counts, meta and
// history): they are built from KEYS[1]'s prefix, so they share its slot,
// and each file's header lists them. prelude.lua holds the helpers scripts
// share (the config version check, the period clock, member ids and
// names, the idempotency records); Source puts before each script the
// helpers it uses, so the text sent to Redis, and its SHA1, is one
// self-contained script. apply.lua's optional
// features are blocks, one file each (apply_<feature>.lua), which Source
// puts in where apply.lua says "-- @blocks" (apply.lua's header says how
// a block joins the event step).
package lua

import (
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
)

//go:embed *.lua
var files embed.FS

// Script names.
const (
	Apply = "apply.lua"
	Top   = "top.lua"
	Ranks = "ranks.lua"
	Ban   = "ban.lua"
	Shard = "shard.lua" // reads of one shard of a sharded board (§9)

	// PutBoard stores a config unless the stored one is final.
	PutBoard = "putboard.lua"

	// Hot is a hot board's apply and bucket boundary work (R22).
	Hot = "hot.lua"

	// Rerecord replaces an existing idempotency record (sharded boards).
	Rerecord = "rerecord.lua"
	// ShardSeq gives a sharded board's events their seqs when their acks
	// carry no ranks.
	ShardSeq = "shardseq.lua"

	Build = "build.lua" // derived boards: recompute members of a derived board
	Deps  = "deps.lua"  // derived boards: a source's list of dependants

	// Member reads on boards ranked in groups: cohorts (§12), regions (§17).
	GroupRanks = "groupranks.lua"

	// Region boards (§17): a period's regions and their sizes.
	Regions = "regions.lua"

	// Cohort boards (§12): a league tier.
	CohortTier = "cohorttier.lua"
	Cohorts    = "cohorts.lua" // a period's placement counters

	// Erase removes one member from one key space (§13, R29); Forget
	// deletes its idempotency records from one bucket, a bounded step at a
	// time.
	Erase  = "erase.lua"
	Forget = "forget.lua"

	// Stream records a board's schedule transitions, or renews its epoch (§15).
	Stream = "stream.lua"
	// Hold records a validation hook's reject, lists and clears held
	// members (§16).
	Hold = "hold.lua"
)

// prelude is the file Source puts before every script.
const prelude = "prelude.lua"

// blocksMark is the line of apply.lua where its blocks go.
const blocksMark = "-- @blocks\n"

// Source returns the named script as sent to Redis: the prelude's header
// and the helpers of the prelude the script uses, then the script, with
// apply.lua's blocks in place. It panics on an unknown name: names are the
// constants above, so a miss is a programming error.
func Source(name string) string {
	src := file(name)
	if name == Apply {
		src = strings.Replace(src, blocksMark, Blocks(), 1)
	}
	return preludeFor(src) + src
}

// preludeFor is the prelude's header followed by the helpers that code src
// calls, and those they call, in the prelude's order. Each helper is a
// closure the script makes on every call, whether it calls it or not, so
// a script gets only its own.
func preludeFor(src string) string {
	header, helpers := preludeHelpers()
	var b strings.Builder
	b.WriteString(header)
	want := map[string]bool{}
	note := func(code string) {
		for _, w := range identifier.FindAllString(stripComments(code), -1) {
			want[w] = true
		}
	}
	note(src)
	// Helpers come before their callers, so one pass from the last notes
	// every helper an included one calls before it is reached.
	use := make([]bool, len(helpers))
	for i := len(helpers) - 1; i >= 0; i-- {
		if want[helpers[i].name] {
			use[i] = true
			note(helpers[i].text)
		}
	}
	for i, h := range helpers {
		if use[i] {
			b.WriteString(h.text)
		}
	}
	return b.String()
}

// helper is one function of the prelude: its name and its text, the
// comment above it included.
type helper struct{ name, text string }

var (
	identifier = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	defines    = regexp.MustCompile(`^local function ([A-Za-z_][A-Za-z0-9_]*)`)
)

// preludeHelpers cuts the prelude into its header (the comment lines
// before its first blank line) and its helpers. A helper starts at the
// comment lines right above its "local function" line and ends where the
// next starts.
func preludeHelpers() (header string, helpers []helper) {
	src := file(prelude)
	header, body, _ := strings.Cut(src, "\n\n")
	header += "\n\n"
	lines := strings.SplitAfter(body, "\n")
	start := 0 // first line of the current piece
	for i, line := range lines {
		m := defines.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		from := i
		for from > start && strings.HasPrefix(lines[from-1], "--") {
			from--
		}
		if len(helpers) > 0 {
			helpers[len(helpers)-1].text = strings.Join(lines[start:from], "")
		} else if from != start && strings.TrimSpace(strings.Join(lines[start:from], "")) != "" {
			panic("lua: prelude code before its first helper")
		}
		helpers = append(helpers, helper{name: m[1]})
		start = from
	}
	if len(helpers) > 0 {
		helpers[len(helpers)-1].text = strings.Join(lines[start:], "")
	}
	return header, helpers
}

// stripComments drops each line's "--" comment (no script has "--" in a
// string).
func stripComments(src string) string {
	var b strings.Builder
	for line := range strings.Lines(src) {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i] + "\n"
		}
		b.WriteString(line)
	}
	return b.String()
}

// Blocks is the text of apply.lua's blocks, the files apply_*.lua in name
// order.
func Blocks() string {
	names, err := fs.Glob(files, "apply_*.lua")
	if err != nil {
		panic(err) // the pattern is valid
	}
	var b strings.Builder
	for _, n := range names {
		b.WriteString(file(n))
	}
	return b.String()
}

// file returns the text of one embedded file.
func file(name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("lua: no script %q", name))
	}
	return string(b)
}
