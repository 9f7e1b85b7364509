package lua

import (
	"regexp"
	"strings"
	"testing"
)

// Every KEYS[i] and ARGV[i] a script uses is listed in its header, and no
// script builds a key: keys arrive only through KEYS.
func TestHeaders(t *testing.T) {
	t.Parallel()
	use := regexp.MustCompile(`\b(KEYS|ARGV)\[(\d+)\]`)
	for _, name := range Names() {
		src := Source(name)
		if !strings.HasPrefix(src, "-- "+name+":") {
			t.Errorf("%s does not start with its name and purpose", name)
		}
		var header, body strings.Builder
		inHeader := true
		for line := range strings.Lines(src) {
			if inHeader && !strings.HasPrefix(line, "--") {
				inHeader = false
			}
			if inHeader {
				header.WriteString(line)
			} else {
				body.WriteString(line)
			}
		}
		for _, m := range use.FindAllStringSubmatch(body.String(), -1) {
			if !strings.Contains(header.String(), "-- "+m[0]+" ") {
				t.Errorf("%s uses %s, which its header does not list", name, m[0])
			}
		}
		if strings.Contains(body.String(), "':{'") || strings.Contains(body.String(), "..':'") {
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
