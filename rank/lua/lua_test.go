package lua

import (
	"io/fs"
	"regexp"
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
// Source puts before it, is listed in its header, and no script builds a
// key: keys arrive only through KEYS.
func TestHeaders(t *testing.T) {
	t.Parallel()
	use := regexp.MustCompile(`\b(KEYS|ARGV)\[(\d+)\]`)
	_, preludeBody := split(file(prelude))
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
		if !strings.HasPrefix(Source(name), file(prelude)) || !strings.HasSuffix(Source(name), src) {
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

func TestSourceUnknown(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("Source of an unknown script did not panic")
		}
	}()
	Source("nope.lua")
}
