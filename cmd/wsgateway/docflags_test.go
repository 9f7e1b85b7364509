package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestProtocolDocListsEveryFlag: the flag table of docs/protocol.md §1
// names every flag `wsgateway --help` prints, with its environment twin,
// so a new flag cannot go undocumented.
func TestProtocolDocListsEveryFlag(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err = run(context.Background(), []string{"--help"}, envMap(nil), &out, &errOut)
	if code := exitCode(err, new(bytes.Buffer)); code != 0 {
		t.Fatalf("--help exit %d (%v)", code, err)
	}
	flags := regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)`).FindAllStringSubmatch(out.String()+errOut.String(), -1)
	if len(flags) < 20 {
		t.Fatalf("found only %d flags in --help:\n%s%s", len(flags), out.String(), errOut.String())
	}
	for _, f := range flags {
		name := f[1]
		row := false
		for line := range strings.Lines(string(doc)) {
			if strings.HasPrefix(line, "| ") && strings.Contains(line, "`--"+name+"`") && strings.Contains(line, "`"+envName(name)+"`") {
				row = true
				break
			}
		}
		if !row {
			t.Errorf("docs/protocol.md's flag table has no row for --%s (%s)", name, envName(name))
		}
	}
}
