package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// testPackages maps the package names docs/testing.md's rule → test table
// uses to their directories.
var testPackages = map[string]string{
	"hub": "hub", "live": "hub/live", "sock": "hub/sock", "api": "api", "auth": "auth",
	"proto": "proto", "rank": "rank", "redisstore": "rank/redisstore", "memstore": "rank/memstore",
	"node": "node", "bus": "bus", "client": "client", "e2e": "e2e", "web": "web",
	"names": "internal/names", "cmd/wsgateway": "cmd/wsgateway", "loadgen": "loadgen",
	"clientaddr": "internal/clientaddr", "hijack": "internal/hijack", "testenv": "internal/testenv",
	"webhook": "webhook", "meta": "internal/meta", "integrity": "integrity",
}

// TestRuleTableNamesRealTests: every test the rule → test table of
// docs/testing.md names exists, so a renamed or deleted test cannot leave
// a rule claiming a proof it no longer has; every rule docs/protocol.md
// states has a row there; and protocol.md, the contract for its users,
// names no test.
func TestRuleTableNamesRealTests(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/testing.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "## Rule → test")
	if !ok {
		t.Fatal("docs/testing.md has no \"## Rule → test\" section")
	}
	protocol, err := os.ReadFile("../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\| (R[0-9]+)\b`).FindAllStringSubmatch(table, -1) {
		rows[m[1]] = true
	}
	for _, rule := range regexp.MustCompile(`\bR[0-9]+\b`).FindAllString(string(protocol), -1) {
		if !rows[rule] {
			t.Errorf("docs/protocol.md states %s, which has no row in docs/testing.md's rule → test table", rule)
			rows[rule] = true // once
		}
	}
	testName := regexp.MustCompile("`[a-z/]+\\.(?:Test|Fuzz|Benchmark)[A-Za-z0-9_]*")
	for _, name := range testName.FindAllString(string(protocol), -1) {
		t.Errorf("docs/protocol.md names the test %s`: tests belong in docs/testing.md's rule → test table", name)
	}
	sources := map[string]string{} // package dir → its test files, concatenated
	src := func(dir string) string {
		if s, ok := sources[dir]; ok {
			return s
		}
		files, _ := filepath.Glob(filepath.Join("../..", dir, "*_test.go"))
		var b strings.Builder
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(data)
		}
		sources[dir] = b.String()
		return sources[dir]
	}
	ref := regexp.MustCompile("`([a-z/]+)\\.((?:Test|Fuzz|Benchmark)[A-Za-z0-9_]*)(\\*?)")
	named := 0
	for _, m := range ref.FindAllStringSubmatch(table, -1) {
		pkg, name, wild := m[1], m[2], m[3] == "*"
		dir, ok := testPackages[pkg]
		if !ok {
			t.Errorf("the rule table names %s.%s: unknown package %q", pkg, name, pkg)
			continue
		}
		named++
		decl := "func " + name
		if !wild {
			decl += "("
		}
		if !strings.Contains(src(dir), decl) {
			t.Errorf("the rule table names %s.%s%s, which %s does not declare", pkg, name, m[3], dir)
		}
	}
	if named < 50 {
		t.Fatalf("found only %d test names in the rule table", named)
	}
}
