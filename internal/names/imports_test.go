package names

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/wsgateway/wsgateway"

// projectDeps is every project package dir imports, directly or not
// (tests excluded), keyed by import path.
func projectDeps(t *testing.T, dir string) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	var walk func(dir string)
	walk = func(dir string) {
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, imp := range pkg.Imports {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok && !seen[imp] {
				seen[imp] = true
				walk(filepath.Join("../..", rel))
			}
		}
	}
	walk(dir)
	return seen
}

// TestImportsPointOneWay: the name rule is a leaf, and the domain and the
// verifier, which use it, import nothing of the wire code (issue 34).
func TestImportsPointOneWay(t *testing.T) {
	t.Parallel()
	if deps := projectDeps(t, "."); len(deps) != 0 {
		t.Errorf("internal/names imports %v; it must import nothing from the project", deps)
	}
	for _, dir := range []string{"../../rank", "../../auth"} {
		if deps := projectDeps(t, dir); deps[module+"/proto"] {
			t.Errorf("%s imports proto (through %v)", dir, deps)
		}
	}
}
