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
		} else if !strings.HasPrefix(Source(name), file(prelude)) || (name != Apply && !strings.HasSuffix(Source(name), src)) {
			t.Errorf("Source(%s) is not the prelude followed by the script", name)
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
	if head, _, ok := strings.Cut(file(Apply), blocksMark); !ok || !strings.HasPrefix(src, file(prelude)+head) {
		t.Errorf("Source(%s) does not put the blocks at the mark", Apply)
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
