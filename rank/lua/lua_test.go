package lua

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// split cuts a file into its leading comment header and the rest.
func split(src string) (header, body string) {
	var h, b strings.Builder
	inHeader := true
	for line := range strings.Lines(src) {
		if inHeader && !strings.HasPrefix(line, "--") {
			inHeader = false
		}
		if inHeader {
			h.WriteString(line)
		} else {
			b.WriteString(line)
		}
	}
	return h.String(), b.String()
}

// Every KEYS[i] and ARGV[i] a script uses, in its own text or in the prelude
// Source puts before it, is listed in its header (an apply.lua block's in
// its own or apply.lua's), and no script builds a key with a hash tag:
// keys arrive through KEYS, or are built from KEYS[1]'s prefix, as the
// headers say.
func TestHeaders(t *testing.T) {
	t.Parallel()
	use := regexp.MustCompile(`\b(KEYS|ARGV)\[(\d+)\]`)
	_, preludeBody := split(file(prelude))
	applyHeader, _ := split(file(Apply))
	blocks, err := fs.Glob(files, "apply_*.lua")
	if err != nil || len(blocks) == 0 {
		t.Fatalf("no blocks (%v)", err)
	}
	scripts, err := fs.Glob(files, "*.lua")
	if err != nil || len(scripts) < 2 {
		t.Fatalf("embedded scripts %v, %v", scripts, err)
	}
	for _, name := range scripts {
		src := file(name)
		if !strings.HasPrefix(src, "-- "+name+":") {
			t.Errorf("%s does not start with its name and purpose", name)
		}
		header, body := split(src)
		if slices.Contains(blocks, name) {
			header += applyHeader
			if !strings.Contains(Source(Apply), src) {
				t.Errorf("Source(%s) does not hold block %s", Apply, name)
			}
		} else if pre, _ := preludeHelpers(); !strings.HasPrefix(Source(name), pre) || (name != Apply && !strings.HasSuffix(Source(name), src)) {
			t.Errorf("Source(%s) is not the prelude's header and helpers followed by the script", name)
		}
		for _, m := range use.FindAllStringSubmatch(body+preludeBody, -1) {
			if !strings.Contains(header, "-- "+m[0]+" ") {
				t.Errorf("%s uses %s, which its header does not list", name, m[0])
			}
		}
		if strings.Contains(body, "':{'") || strings.Contains(body, "..':'") {
			t.Errorf("%s seems to build a key name", name)
		}
	}
}

// TestBlocks: apply.lua's blocks go where it marks them, in name order,
// each an if ... end that a board without the feature skips whole.
func TestBlocks(t *testing.T) {
	t.Parallel()
	src := Source(Apply)
	if strings.Contains(src, blocksMark) {
		t.Fatalf("Source(%s) still holds the mark %q", Apply, blocksMark)
	}
	blocks, _ := fs.Glob(files, "apply_*.lua")
	at := -1
	for _, name := range blocks {
		i := strings.Index(src, file(name))
		if i < 0 || i < at {
			t.Fatalf("block %s missing or out of name order in Source(%s)", name, Apply)
		}
		at = i
		_, body := split(file(name))
		if !strings.HasPrefix(body, "if ") || !strings.HasSuffix(body, "\nend\n") {
			t.Errorf("block %s is not one if ... end", name)
		}
	}
	head, _, ok := strings.Cut(file(Apply), blocksMark)
	if i := strings.Index(src, head); !ok || i < 0 || !strings.HasPrefix(src[i+len(head):], Blocks()) {
		t.Errorf("Source(%s) does not put the blocks at the mark", Apply)
	}
}

// TestPrelude: Source gives each script the prelude's helpers its code
// calls, and those they call, and leaves out the others (each is a
// closure the script would make on every call).
func TestPrelude(t *testing.T) {
	t.Parallel()
	header, helpers := preludeHelpers()
	var all strings.Builder
	all.WriteString(header)
	for _, h := range helpers {
		all.WriteString(h.text)
	}
	if all.String() != file(prelude) || len(helpers) < 10 {
		t.Fatalf("the prelude's header and %d helpers do not make the prelude", len(helpers))
	}
	scripts, _ := fs.Glob(files, "*.lua")
	for _, name := range scripts {
		if name == prelude || strings.HasPrefix(name, "apply_") {
			continue
		}
		src := file(name)
		if name == Apply {
			src = strings.Replace(src, blocksMark, Blocks(), 1)
		}
		pre, ok := strings.CutSuffix(Source(name), src)
		if !ok || !strings.HasPrefix(pre, header) {
			t.Errorf("Source(%s) is not the prelude's header, helpers and the script", name)
			continue
		}
		// The helpers the script needs: those its code names, then those
		// they name, until none is added.
		need := map[string]bool{}
		code := stripComments(src)
		for grew := true; grew; {
			grew = false
			for _, h := range helpers {
				if !need[h.name] && regexp.MustCompile(`\b`+h.name+`\b`).MatchString(code) {
					need[h.name], grew = true, true
					code += stripComments(h.text)
				}
			}
		}
		for _, h := range helpers {
			if has := strings.Contains(pre, h.text); has != need[h.name] {
				t.Errorf("Source(%s) holds helper %s: %v, want %v", name, h.name, has, need[h.name])
			}
		}
	}
	// Spot checks of the rule above: apply.lua calls recordsFlush, which
	// calls hsetMap; top.lua keeps no records.
	if !strings.Contains(Source(Apply), "local function hsetMap(") || strings.Contains(Source(Top), "local function recordsOpen(") {
		t.Errorf("Source(%s) lacks hsetMap or Source(%s) holds recordsOpen", Apply, Top)
	}
}

func TestSourceUnknown(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("Source of an unknown script did not panic")
		}
	}()
	Source("nope.lua")
}
